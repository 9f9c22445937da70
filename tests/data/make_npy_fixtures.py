"""Writes the .npy and .npz fixtures tests/test_npy.cpp reads, with numpy.save, numpy.savez and
numpy.savez_compressed.
Run with Debian's python3 (python3-numpy):

    /usr/bin/python3 tests/data/make_npy_fixtures.py tests/data
"""
import os
import sys

import numpy as np


def main(out_dir):
    def save(name, array):
        np.save(os.path.join(out_dir, name + ".npy"), array)

    save("f4_2x3", np.arange(6, dtype="<f4").reshape(2, 3) / 4)
    save("f8_big_endian", np.array([1.5, -2.25, 1e300], dtype=">f8"))
    save("i8_scalar", np.array(-7, dtype="<i8"))
    save("u1_image", np.array([[0, 128, 255]], dtype="u1"))
    save("i2_negative", np.array([-32768, -1, 32767], dtype="<i2"))
    save("b1", np.array([True, False, True]))
    save("f2", np.array([0.5, -2.0, 65504.0], dtype="<f2"))
    save("f4_fortran_3x2", np.asfortranarray(np.arange(6, dtype="<f4").reshape(3, 2)))
    save("u8_large", np.array([2**63 + 1], dtype="<u8"))
    save("c8_complex", np.array([1 + 2j], dtype="<c8"))
    save("c16_big_endian", np.array([1.5 - 0.25j, -3e300 + 1j], dtype=">c16"))
    save("m8_datetime", np.array(["2026-01-01"], dtype="<M8[D]"))
    save("empty_0x4", np.zeros((0, 4), dtype="<i4"))
    arrays = {"weights": np.arange(12, dtype="<f4").reshape(3, 4),
              "labels": np.array([3, 1, 2], dtype="<i8")}
    np.savez(os.path.join(out_dir, "stored.npz"), **arrays)
    np.savez_compressed(os.path.join(out_dir, "compressed.npz"), **arrays)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
