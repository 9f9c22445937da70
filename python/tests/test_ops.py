"""The data-dependent ops, scans, linear algebra and Fourier transforms against NumPy, and the
executors from Python."""

import numpy as np
import pytest

import kiln


def test_sorting_and_selecting(rng):
    a = rng.standard_normal((3, 5))
    k = kiln.tensor(a)
    values, indices = k.sort(1, descending=True)
    np.testing.assert_allclose(values.numpy(), -np.sort(-a, 1))
    np.testing.assert_array_equal(indices.numpy(), np.argsort(-a, 1, kind="stable"))
    np.testing.assert_array_equal(kiln.argsort(k).numpy(), np.argsort(a, -1, kind="stable"))
    top, where = kiln.topk(k, 2)
    np.testing.assert_allclose(top.numpy(), -np.sort(-a, 1)[:, :2])
    idx = np.array([[0, 4], [1, 1], [3, 2]])
    np.testing.assert_allclose(k.gather(1, idx).numpy(), np.take_along_axis(a, idx, 1))
    np.testing.assert_allclose(k.index_select(1, [4, 0]).numpy(), a[:, [4, 0]])
    np.testing.assert_allclose(k.masked_select(a > 0).numpy(), a[a > 0])
    np.testing.assert_array_equal(kiln.nonzero(a > 0).numpy(), np.argwhere(a > 0))
    added = kiln.zeros(3, 5, dtype=kiln.float64).scatter_add(1, idx, np.ones((3, 2)))
    expected = np.zeros((3, 5))
    np.add.at(expected, (np.arange(3)[:, None], idx), 1)
    np.testing.assert_allclose(added.numpy(), expected)


def test_scans_and_everyday_ops(rng):
    a = rng.standard_normal((4, 4))
    k = kiln.tensor(a)
    np.testing.assert_allclose(k.cumsum(1).numpy(), np.cumsum(a, 1))
    np.testing.assert_allclose(k.cumprod(0).numpy(), np.cumprod(a, 0))
    np.testing.assert_allclose(k.tril().numpy(), np.tril(a))
    np.testing.assert_allclose(k.triu(1).numpy(), np.triu(a, 1))
    np.testing.assert_allclose(k.flip([0]).numpy(), a[::-1])
    np.testing.assert_allclose(k.roll(1, 1).numpy(), np.roll(a, 1, 1))
    np.testing.assert_allclose(k.repeat([2, 1]).numpy(), np.tile(a, (2, 1)))
    np.testing.assert_allclose(k.norm().item(), np.linalg.norm(a))
    np.testing.assert_allclose(k.logsumexp(1).numpy(), np.log(np.exp(a).sum(1)))
    np.testing.assert_allclose(kiln.einsum("ij,jk->ik", k, k).numpy(), a @ a)
    np.testing.assert_allclose(kiln.outer(k[0], k[1]).numpy(), np.outer(a[0], a[1]))
    np.testing.assert_allclose(kiln.clamp(k, -0.5, 0.5).numpy(), np.clip(a, -0.5, 0.5))
    np.testing.assert_array_equal(kiln.one_hot([2, 0], 3).numpy(), np.eye(3)[[2, 0]])


def test_linear_algebra_and_fft(rng):
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((4, 2))
    np.testing.assert_allclose(kiln.linalg.solve(a, b).numpy(), np.linalg.solve(a, b), rtol=1e-10)
    np.testing.assert_allclose(kiln.linalg.inv(a).numpy(), np.linalg.inv(a), rtol=1e-10)
    np.testing.assert_allclose(kiln.linalg.det(a).item(), np.linalg.det(a), rtol=1e-10)
    s = a @ a.T
    w, v = kiln.linalg.eigh(s)
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(s), rtol=1e-10)
    u, sv, vh = kiln.linalg.svd(a)
    np.testing.assert_allclose((u.numpy() * sv.numpy()) @ vh.numpy(), a, atol=1e-10)
    x = rng.standard_normal(16)
    np.testing.assert_allclose(kiln.fft.fft(kiln.tensor(x)).numpy(), np.fft.fft(x), atol=1e-10)
    np.testing.assert_allclose(kiln.fft.rfft(kiln.tensor(x)).numpy(), np.fft.rfft(x), atol=1e-10)
    np.testing.assert_allclose(kiln.fft.irfft(kiln.fft.rfft(kiln.tensor(x))).numpy(), x, atol=1e-10)


def test_executors_from_python():
    assert "cpu" in kiln.executors() and "reference" in kiln.executors()
    t = (kiln.ones(4) * 2).eval(executor="reference")
    assert t.tolist() == [2.0] * 4
    assert t.is_on("cpu")
    with pytest.raises(kiln.Error):
        kiln.ones(2).eval(executor="no such executor")
    before = kiln.current_executor()
    kiln.set_executor("reference")
    try:
        assert kiln.current_executor() == "reference"
        assert (kiln.arange(3) + 1).tolist() == [1, 2, 3]
    finally:
        kiln.set_executor(before)


def test_float32_matmul_precision_as_torch():
    assert kiln.get_float32_matmul_precision() == "highest"
    kiln.set_float32_matmul_precision("high")
    try:
        assert kiln.get_float32_matmul_precision() == "high"
        with pytest.raises(kiln.Error):
            kiln.set_float32_matmul_precision("fast")
    finally:
        kiln.set_float32_matmul_precision("highest")


def test_rounding_and_remainders_as_numpy(rng):
    a = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -1.7, 3.2])
    k = kiln.tensor(a)
    np.testing.assert_array_equal(kiln.floor(k).numpy(), np.floor(a))
    np.testing.assert_array_equal(kiln.ceil(k).numpy(), np.ceil(a))
    np.testing.assert_array_equal(kiln.round(k).numpy(), np.round(a))  # halves to even
    np.testing.assert_array_equal(kiln.trunc(k).numpy(), np.trunc(a))
    b = rng.uniform(0.5, 3, a.shape) * np.where(rng.random(a.shape) < 0.5, -1, 1)
    np.testing.assert_allclose(kiln.fmod(k, b).numpy(), np.fmod(a, b))
    np.testing.assert_allclose(kiln.remainder(k, b).numpy(), np.remainder(a, b))
    np.testing.assert_allclose(kiln.atan2(k, b).numpy(), np.arctan2(a, b))
