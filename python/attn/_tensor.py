"""Python-side methods of attn.Tensor: arithmetic through attn's differentiable ops, and
PyTorch interop (an attn.Tensor handed to a torch function becomes a torch tensor copy, so
torch_module.load_state_dict(attn_module.state_dict()) works)."""
import numpy as np

from . import _attn
from ._attn import Tensor


def _constant_like(x, value):
    return _attn.tensor(np.full(x.shape, value, np.float32))


def _operand(x, other, op):
    """other as a Tensor of x's shape: a Tensor as it is (the op checks its shape), a number
    as a constant; anything else is a TypeError."""
    if isinstance(other, Tensor):
        return other
    if isinstance(other, (int, float)) and not isinstance(other, bool):
        return _constant_like(x, float(other))
    raise TypeError(f"attn.Tensor {op}: expected an attn.Tensor or a number, got {type(other).__name__}")


def _add(a, b):
    return _attn.add(a, _operand(a, b, "+"))


def _sub(a, b):
    b = _operand(a, b, "-")
    return _attn.add(a, _attn.scale(b, -1.0))


def _rsub(a, b):
    return _attn.add(_attn.scale(a, -1.0), _operand(a, b, "-"))


def _mul(a, b):
    if isinstance(b, (int, float)) and not isinstance(b, bool):
        return _attn.scale(a, float(b))
    return _attn.mul(a, _operand(a, b, "*"))


def _truediv(a, b):
    if isinstance(b, (int, float)) and not isinstance(b, bool):
        return _attn.scale(a, 1.0 / float(b))
    raise TypeError("attn.Tensor /: only division by a number is supported (attn has no elementwise divide op)")


def _transpose(x):
    if len(x.shape) != 2:
        raise _attn.ShapeError(f"attn.Tensor .T: expected a 2-d tensor (use attn.transpose_last2), got {x.shape}")
    return _attn.transpose_last2(x)


def _len(x):
    if not x.shape:
        raise TypeError("len() of a 0-d attn.Tensor")
    return x.shape[0]


def _getitem(x, index):
    """x[i] (N, ...) -> (...) and x[a:b:c] -> (M, ...) on the first dimension, differentiable
    (gather_rows; a copy). Other index kinds are a TypeError."""
    if not x.shape:
        raise IndexError("attn.Tensor: a 0-d tensor cannot be indexed")
    n = x.shape[0]
    if isinstance(index, slice):
        return _attn.gather_rows(x, _attn.tensor(np.array(range(n)[index], np.int32)))
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"attn.Tensor indexing takes an int or a slice of the first dimension, got "
                        f"{type(index).__name__}")
    i = int(index) + n if index < 0 else int(index)
    if not 0 <= i < n:
        raise IndexError(f"attn.Tensor: index {index} is out of range for dimension 0 of size {n}")
    return _attn.reshape(_attn.gather_rows(x, _attn.tensor(np.array([i], np.int32))), list(x.shape[1:]))


def _bool(x):
    """As torch: the value of a one-element tensor; any other is ambiguous."""
    n = int(np.prod(x.shape))
    if n != 1:
        raise ValueError(f"the truth value of an attn.Tensor of shape {x.shape} is ambiguous (it has {n} elements)")
    return bool(x.numpy().reshape(()))


def _to_torch(value):
    import torch
    if isinstance(value, Tensor):
        return torch.from_numpy(np.array(value.numpy()))
    if isinstance(value, (list, tuple)):
        return type(value)(_to_torch(v) for v in value)
    return value


def _torch_function(cls, func, types, args=(), kwargs=None):
    return func(*_to_torch(tuple(args)), **{k: _to_torch(v) for k, v in (kwargs or {}).items()})


Tensor.__add__ = _add
Tensor.__radd__ = _add
Tensor.__sub__ = _sub
Tensor.__rsub__ = _rsub
Tensor.__mul__ = _mul
Tensor.__rmul__ = _mul
Tensor.__truediv__ = _truediv
Tensor.__neg__ = lambda x: _attn.scale(x, -1.0)
Tensor.__matmul__ = lambda a, b: _attn.matmul(a, b)
Tensor.__len__ = _len
Tensor.__getitem__ = _getitem
Tensor.__bool__ = _bool
Tensor.sum = lambda x: _attn.sum(x)
Tensor.exp = lambda x: _attn.exp(x)
Tensor.log = lambda x: _attn.log(x)
Tensor.mean = lambda x: _attn.mean(x)
Tensor.T = property(_transpose)
Tensor.__torch_function__ = classmethod(_torch_function)


def ones(*shape):
    """ones(2, 3) or ones((2, 3)): float32 ones."""
    dims = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    return _attn.tensor(np.ones(dims, np.float32))


def randn(*shape, seed=None):
    """Standard normal float32 values (numpy's generator; seed for reproducible draws)."""
    dims = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    return _attn.tensor(np.random.default_rng(seed).standard_normal(dims).astype(np.float32))
