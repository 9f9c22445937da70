"""Gradients against finite differences, backward(), and the gradient context."""

import numpy as np
import pytest

import kiln


def numeric_gradient(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


@pytest.mark.parametrize("name,fn", [
    ("tanh-sum", lambda t: kiln.tanh(t).sum()),
    ("softmax-weighted", lambda t: (t.softmax(-1) * kiln.tensor([1.0, 2.0, 3.0], dtype=kiln.float64)).sum()),
    ("matmul-square", lambda t: ((t @ t.T) ** 2).mean()),
    ("exp-log", lambda t: (t.exp() + 1).log().sum()),
])
def test_gradients_match_finite_differences(name, fn, rng):
    x = rng.standard_normal((2, 3))

    def value(a):
        return fn(kiln.tensor(a)).item()

    k = kiln.tensor(x).watch()
    with kiln.gradient_context():
        y = fn(k)
    (g,) = kiln.gradients(y, [k])
    np.testing.assert_allclose(g.numpy(), numeric_gradient(value, x), rtol=1e-5, atol=1e-7)


def test_backward_accumulates_into_grad():
    x = kiln.tensor([1.0, 2.0, 3.0]).watch()
    assert x.requires_grad
    for _ in range(2):
        with kiln.gradient_context():
            y = (x * x).sum()
        y.backward()
    assert x.grad.tolist() == [4.0, 8.0, 12.0]
    x.zero_grad()
    assert x.grad is None


def test_gradient_context_is_needed():
    x = kiln.tensor([1.0]).watch()
    y = (x * 3).sum()  # built outside a context: no gradient recorded
    with pytest.raises(kiln.Error) as e:
        kiln.gradients(y, [x])
    assert e.value.kind == "illegal_derive"
    assert not kiln.in_gradient_context()
    with kiln.gradient_context():
        assert kiln.in_gradient_context()
    assert not kiln.in_gradient_context()
