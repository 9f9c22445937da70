"""kiln.Tensor against NumPy: creation, dtypes, operators, reductions, indexing, errors."""

import math

import numpy as np
import pytest

import kiln


def test_creation_follows_pytorchs_dtypes():
    assert kiln.tensor([1.0, 2.0]).dtype == kiln.float32
    assert kiln.tensor([1, 2]).dtype == kiln.int64
    assert kiln.tensor([True, False]).dtype == kiln.bool
    assert kiln.tensor(np.zeros(3)).dtype == kiln.float64  # NumPy arrays keep theirs
    assert kiln.tensor(np.zeros(3, np.uint8)).dtype == kiln.uint8
    assert kiln.tensor(np.zeros(3, np.uint16)).dtype == kiln.int32  # widened
    assert kiln.tensor([1, 2], dtype=kiln.float64).dtype == kiln.float64
    assert kiln.zeros(2, 3).shape == (2, 3)
    assert kiln.ones((4,), dtype=kiln.int32).tolist() == [1, 1, 1, 1]
    assert kiln.full((2,), 7.5).tolist() == [7.5, 7.5]
    assert kiln.arange(2, 11, 3).tolist() == [2, 5, 8]
    assert kiln.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert kiln.arange(5, 0, -2).tolist() == [5, 3, 1]


def test_operators_match_numpy(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float32)
    ka, kb = kiln.tensor(a), kiln.tensor(b)
    for got, want in [(ka + kb, a + b), (ka - kb, a - b), (ka * kb, a * b), (ka / kb, a / b),
                      (ka + 1.5, a + 1.5), (2 - ka, 2 - a), (2 * ka, 2 * a), (1 / ka, 1 / a),
                      (-ka, -a), (abs(ka), np.abs(a)), (ka ** 2, a ** 2),
                      (ka @ kb, a @ b), (ka.exp(), np.exp(a)), (kiln.tanh(ka), np.tanh(a)),
                      (ka.softmax(-1), np.exp(a) / np.exp(a).sum(-1, keepdims=True))]:
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    # Python numbers are weak scalars: they keep the tensor's dtype.
    assert (ka * 0.5).dtype == kiln.float32
    assert (kiln.tensor([1, 2]) + 1).dtype == kiln.int64
    np.testing.assert_array_equal((ka > 0).numpy(), a > 0)
    assert (ka > 0).dtype == kiln.bool


def test_reductions_match_numpy(rng):
    a = rng.standard_normal((2, 3, 4))
    k = kiln.tensor(a)
    np.testing.assert_allclose(k.sum().item(), a.sum())
    np.testing.assert_allclose(k.sum(1).numpy(), a.sum(1))
    np.testing.assert_allclose(k.mean((0, 2), keepdim=True).numpy(), a.mean((0, 2), keepdims=True))
    np.testing.assert_allclose(k.max(-1).numpy(), a.max(-1))
    np.testing.assert_allclose(k.std().item(), a.std(ddof=1))
    np.testing.assert_array_equal(k.argmax(2).numpy(), a.argmax(2))
    assert k.argmax().item() == a.argmax()


def test_indexing_matches_numpy():
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    k = kiln.tensor(a)
    for key in [0, -1, (1, 2), (slice(None), 1), (slice(1, None, 2), slice(None, None, -1)),
                (None, 0), (Ellipsis, 3), (0, Ellipsis, None), np.array([2, 0]),
                (slice(None), [3, 1]), a[..., 0] > 20]:
        np.testing.assert_array_equal(k[key].numpy(), a[key], err_msg=str(key))


def test_setitem_rebinds_the_handle():
    k = kiln.zeros(2, 3)
    alias = k
    k[0, 1] = 5.0
    k[1] = kiln.tensor([1.0, 2.0, 3.0])
    assert k.tolist() == [[0.0, 5.0, 0.0], [1.0, 2.0, 3.0]]
    assert alias.tolist() == k.tolist()  # the same Python object


def test_reading_values():
    k = kiln.tensor([[1.5, 2.0]])
    assert k.item.__doc__ is None or True
    assert kiln.tensor(3.5).item() == 3.5
    assert float(kiln.tensor([2.5])) == 2.5
    assert int(kiln.tensor([7])) == 7
    assert bool(kiln.tensor([True]))
    assert len(k) == 1
    assert k.tolist() == [[1.5, 2.0]]
    assert repr(k).startswith("Tensor f32[1,2]")
    assert k.ndim == 2 and k.size(1) == 2 and k.numel() == 2
    with pytest.raises(kiln.Error):
        bool(kiln.tensor([True, False]))


def test_errors_are_kiln_errors_naming_op_and_shapes():
    with pytest.raises(kiln.Error) as e:
        kiln.tensor([1.0, 2.0]) + kiln.tensor([1.0, 2.0, 3.0])
    assert e.value.kind == "incompatible_shapes"
    assert "[2]" in str(e.value) and "[3]" in str(e.value)
    assert isinstance(e.value, RuntimeError)
    with pytest.raises(kiln.Error) as e:
        kiln.zeros(2, 3).reshape(4, 2)
    assert "reshape" in str(e.value)
    with pytest.raises(kiln.Error):
        kiln.zeros(3)[5]
    with pytest.raises(kiln.Error):
        kiln.zeros(3)[kiln.tensor([0.5])]
    with pytest.raises(TypeError):
        kiln.zeros(3) + "text"


def test_dtypes_convert():
    k = kiln.tensor([1.7, -2.2])
    assert k.to(kiln.int32).tolist() == [1, -2]
    assert k.double().dtype == kiln.float64
    assert k.to(kiln.bfloat16).float().tolist() == pytest.approx([1.7, -2.2], rel=1e-2)
    z = kiln.tensor(np.array([1 + 2j], dtype=np.complex64))
    assert z.dtype == kiln.complex64 and z.tolist() == [1 + 2j]


def test_laziness_and_eval():
    x = kiln.ones(1000)
    y = (x * 2 + 1).exp()
    assert not y.is_evaluated()
    assert y.eval() is y
    assert y.is_evaluated()
    assert math.isclose(y[3].item(), math.exp(3), rel_tol=1e-6)


def test_arange_and_isclose_as_pytorch():
    assert kiln.arange(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert kiln.arange(0, 1, 0.25).dtype == kiln.float32
    assert kiln.arange(2.0).tolist() == [0.0, 1.0]
    inf, nan = float("inf"), float("nan")
    a = kiln.tensor([1.0, 1.0 + 1e-6, inf, nan], dtype=kiln.float64)
    b = kiln.tensor([1.0, 1.0, inf, nan], dtype=kiln.float64)
    assert kiln.isclose(a, b).tolist() == [True, True, True, False]
    assert kiln.isclose(a, b, equal_nan=True).tolist() == [True, True, True, True]
    assert kiln.allclose([1.0, 2.0], [1.0, 2.0 + 1e-7])
    assert not kiln.allclose([1.0], [1.1])
