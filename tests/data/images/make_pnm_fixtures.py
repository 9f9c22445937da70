"""Writes the binary PNM fixtures tests/test_images_pnm_hdr_psd.cpp reads, with Pillow:
pnm_grey.pgm (P5, 8 bits), pnm_rgb.ppm (P6, 8 bits) and pnm_grey16.pgm (P5, 16 bits), each
7 x 5 pixels from a formula the test recomputes.
Run with a python3 that has Pillow:

    python3 tests/data/images/make_pnm_fixtures.py tests/data/images
"""
import os
import sys

from PIL import Image

WIDTH, HEIGHT = 7, 5


def value8(x, y, c):
    return (x * 37 + y * 91 + c * 53) % 256


def value16(x, y):
    return (x * 4099 + y * 9001 + 17) % 65536


def main(out_dir):
    grey = Image.new("L", (WIDTH, HEIGHT))
    grey.putdata([value8(x, y, 0) for y in range(HEIGHT) for x in range(WIDTH)])
    grey.save(os.path.join(out_dir, "pnm_grey.pgm"))

    rgb = Image.new("RGB", (WIDTH, HEIGHT))
    rgb.putdata([tuple(value8(x, y, c) for c in range(3))
                 for y in range(HEIGHT) for x in range(WIDTH)])
    rgb.save(os.path.join(out_dir, "pnm_rgb.ppm"))

    # Pillow writes mode I;16 as a P5 file with maxval 65535, samples big-endian.
    grey16 = Image.new("I;16", (WIDTH, HEIGHT))
    grey16.putdata([value16(x, y) for y in range(HEIGHT) for x in range(WIDTH)])
    grey16.save(os.path.join(out_dir, "pnm_grey16.pgm"))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
