import numpy as np
import pytest
import torch

import attn
from parity import assert_close, randn, to_attn, to_torch

UNARY = [("tanh", torch.tanh), ("sigmoid", torch.sigmoid), ("relu", torch.relu),
         ("gelu", torch.nn.functional.gelu)]
SHAPES = [(1,), (3, 5), (2, 3, 7)]


@pytest.mark.parametrize("name,torch_fn", UNARY)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("magnitude", [1.0, 1e3])
def test_unary(name, torch_fn, shape, magnitude):
    x = randn(1, *shape, scale=magnitude)
    seed = randn(2, *shape)
    xa = to_attn(x, requires_grad=True)
    ya = getattr(attn, name)(xa)
    attn.backward(ya, seed)
    xt = to_torch(x, requires_grad=True)
    yt = torch_fn(xt)
    yt.backward(torch.tensor(seed))
    case = f"shape={shape} magnitude={magnitude}"
    assert_close(name, case, "output", ya, yt)
    assert_close(name, case, "grad x", xa.grad, xt.grad)


@pytest.mark.parametrize("name,torch_fn", [("exp", torch.exp), ("log", torch.log)])
@pytest.mark.parametrize("shape", SHAPES)
def test_exp_log(name, torch_fn, shape):
    # exp over [-30, 30] (no overflow), log over (0, 1e3] (away from the pole at 0)
    x = randn(6, *shape, scale=10.0) if name == "exp" else np.abs(randn(6, *shape, scale=100.0)) + 1e-3
    seed = randn(7, *shape)
    xa = to_attn(x, requires_grad=True)
    ya = getattr(xa, name)()  # the Tensor method, which calls attn.exp / attn.log
    attn.backward(ya, seed)
    xt = to_torch(x, requires_grad=True)
    yt = torch_fn(xt)
    yt.backward(torch.tensor(seed))
    assert_close("elementwise", f"{name} shape={shape}", "output", ya, yt)
    assert_close("elementwise", f"{name} shape={shape}", "grad x", xa.grad, xt.grad)


def test_exp_log_errors():
    assert np.isneginf(attn.log(attn.tensor(np.zeros(2, np.float32))).numpy()).all()  # torch.log(0) too
    with pytest.raises(ValueError, match=r"log: 'x' must be >= 0 .* got -1.000000 at flat index 2"):
        attn.log(attn.tensor(np.array([1, 2, -1], np.float32)))
    with pytest.raises(ValueError, match=r"exp: 'x' expected float32, got int32"):
        attn.exp(attn.tensor(np.array([1, 2], np.int32)))


@pytest.mark.parametrize("name,torch_fn", [("add", torch.add), ("mul", torch.mul)])
@pytest.mark.parametrize("shape", SHAPES)
def test_binary(name, torch_fn, shape):
    a, b, seed = randn(3, *shape), randn(4, *shape), randn(5, *shape)
    aa, ba = to_attn(a, True), to_attn(b, True)
    ya = getattr(attn, name)(aa, ba)
    attn.backward(ya, seed)
    at, bt = to_torch(a, True), to_torch(b, True)
    yt = torch_fn(at, bt)
    yt.backward(torch.tensor(seed))
    case = f"shape={shape}"
    assert_close("elementwise", case, "output", ya, yt)
    assert_close("elementwise", case, "grad a", aa.grad, at.grad)
    assert_close("elementwise", case, "grad b", ba.grad, bt.grad)


def test_shape_error_is_a_value_error():
    with pytest.raises(ValueError, match=r"add: 'b' expected \(2, 3\)"):
        attn.add(attn.zeros([2, 3]), attn.zeros([3, 2]))
    assert issubclass(attn.ShapeError, ValueError)
