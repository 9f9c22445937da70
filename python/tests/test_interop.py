"""Values shared with NumPy, PyTorch and JAX without copies, and kept alive as long as needed."""

import gc
import os

import numpy as np
import pytest

import kiln


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_numpy_reads_kiln_memory_without_a_copy():
    k = (kiln.ones(4, 5) * 3).eval()
    a = np.asarray(k)
    b = k.numpy()
    assert address(a) == address(b)  # both views of kiln's one buffer
    assert a.shape == (4, 5) and a.dtype == np.float32 and (a == 3).all()
    assert not a.flags.writeable  # kiln's graphs may still read the values
    view = memoryview(k)
    assert view.readonly and view.format == "f" and view.shape == (4, 5)
    assert np.frombuffer(view, dtype=np.float32).__array_interface__["data"][0] == address(a)


def test_from_numpy_shares_aligned_memory():
    a = kiln.empty_aligned((2, 3), "float64")
    assert address(a) % 64 == 0
    a[...] = np.arange(6).reshape(2, 3)
    k = kiln.from_numpy(a, copy=False)
    assert address(np.asarray(k)) == address(a)
    a[0, 0] = 100.0  # as torch.from_numpy: the tensor reads the array
    assert k[0, 0].item() == 100.0
    with pytest.raises(kiln.Error):
        kiln.from_numpy(a[:, ::2])  # not contiguous
    with pytest.raises(kiln.Error):
        kiln.from_numpy(np.zeros(3, np.uint16))  # no such kiln dtype


def test_unaligned_numpy_memory_is_copied_once_or_refused():
    raw = np.zeros(64 + 8 + 48, dtype=np.uint8)
    start = (64 - address(raw) % 64) % 64 + 8  # 8 bytes past a 64-byte boundary
    a = raw[start:start + 48].view(np.float64)
    a[:] = np.arange(6)
    k = kiln.from_numpy(a)
    assert address(np.asarray(k)) != address(a)
    assert k.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.raises(kiln.Error) as e:
        kiln.from_numpy(a, copy=False)
    assert "aligned" in str(e.value)
    c = kiln.from_numpy(kiln.empty_aligned(4), copy=True)
    assert c.shape == (4,)


def test_a_numpy_view_keeps_kilns_buffer_alive():
    k = (kiln.arange(1000) * 2).eval()
    a = np.asarray(k)
    del k
    gc.collect()
    kiln.ones(1000).eval()  # reuse of freed memory would show here
    assert a[999] == 1998


def test_a_kiln_tensor_keeps_the_numpy_array_alive():
    a = kiln.empty_aligned(1000, np.float64)
    a[:] = 7.0
    k = kiln.from_numpy(a, copy=False)
    del a
    gc.collect()
    assert (k * 1).sum().item() == 7000.0


def rss_kib() -> int:
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_round_trips_do_not_leak():
    a = kiln.empty_aligned((64, 64), np.float32)
    a[...] = 1.0

    def round_trips(n):
        for _ in range(n):
            k = kiln.from_numpy(a, copy=False)
            b = np.from_dlpack(k + 1)
            c = np.asarray(kiln.from_dlpack(b, copy=False))
            assert c[0, 0] == 2.0

    round_trips(2000)  # warm: caches and pools settle
    before = rss_kib()
    round_trips(10000)
    grown = rss_kib() - before
    assert grown < 8 * 1024, f"RSS grew by {grown} KiB over 10,000 round trips"


def test_torch_shares_memory_both_ways():
    torch = pytest.importorskip("torch")
    k = (kiln.ones(3, 3) * 2).eval()
    t = torch.from_dlpack(k)
    assert t.data_ptr() == address(np.asarray(k))
    assert float(t.sum()) == 18.0
    src = torch.arange(6, dtype=torch.float32)
    k2 = kiln.from_dlpack(src)
    assert address(np.asarray(k2)) == src.data_ptr()


def test_narrow_integers_cross_with_their_types():
    image = np.array([[0, 128, 255]], dtype=np.uint8)
    k = kiln.tensor(image)
    assert k.dtype == kiln.uint8 and k.dtype.itemsize == 1
    assert np.asarray(k).dtype == np.uint8 and (np.asarray(k) == image).all()
    assert memoryview(k.eval()).format == "B"
    assert (k + 1).tolist() == [[1, 129, 0]]  # wraps, as torch.uint8
    assert (k.to(kiln.float32) / 255).dtype == kiln.float32
    assert kiln.tensor(np.array([-5], np.int8)).dtype == kiln.int8
    assert kiln.tensor(np.array([-300], np.int16)).numpy().dtype == np.int16
    torch = pytest.importorskip("torch")
    t = torch.from_dlpack(kiln.tensor(np.array([1, 2], np.int16)).eval())
    assert t.dtype == torch.int16 and t.tolist() == [1, 2]
    back = kiln.from_dlpack(torch.tensor([7, 250], dtype=torch.uint8))
    assert back.dtype == kiln.uint8 and back.tolist() == [7, 250]


def test_jax_shares_memory_both_ways():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    k = (kiln.ones(8) * 3).eval()
    j = jnp.from_dlpack(k)
    assert float(j.sum()) == 24.0
    assert j.unsafe_buffer_pointer() == address(np.asarray(k))
    src = jnp.arange(8, dtype=jnp.float32)
    k2 = kiln.from_dlpack(src, copy=False)
    assert k2.tolist() == list(range(8))
    assert address(np.asarray(k2)) == src.unsafe_buffer_pointer()
