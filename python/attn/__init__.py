"""attn: attention mechanisms with hand-written kernels, from Python.

    import attn, numpy as np
    x = attn.tensor(np.ones((2, 3), np.float32), requires_grad=True)
    attn.backward(attn.sum(attn.tanh(x)))
"""
from ._attn import *  # noqa: F401,F403
from ._attn import ShapeError, ValueError_ as ValueError, IoError, Error  # noqa: F401
