"""attn: attention mechanisms with hand-written kernels, from Python.

    import attn, numpy as np
    x = attn.tensor(np.ones((2, 3), np.float32), requires_grad=True)
    attn.backward(attn.sum(attn.tanh(x)))

attn.tensor converts numpy data (and anything np.asarray takes) to attn's two dtypes, never
changing a value silently:
    bool, int8/16/32, uint8/16   -> int32, exact
    int64, uint32/64             -> int32, each value checked: one outside int32 is a ValueError
    float16/32                   -> float32, exact
    float64                      -> float32, rounded to nearest (about 7 significant digits);
                                    a finite value beyond float32's range is a ValueError
    complex, object, str         -> ValueError
"""
from ._attn import *  # noqa: F401,F403
from ._attn import ShapeError, ValueError_ as ValueError, IoError, Error  # noqa: F401
from ._attn import __version__  # noqa: F401  (CMakeLists.txt's project version)
from ._tensor import ones, randn  # noqa: F401,E402  (and attn.Tensor's + - * / @, .sum(), .T, len)
import importlib as _importlib  # noqa: E402

# attn.nn: PyTorch's constructors, names and masks over the native modules (attn._attn.nn).
# import_module, since `from . import nn` would return the native submodule already bound.
nn = _importlib.import_module(".nn", __name__)
from . import safetensors  # noqa: F401,E402  (attn.safetensors.load / save: plain tensor dicts)
