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
attn.borrow(array) copies nothing: the tensor shares a writable, C-contiguous float32 or
int32 array's memory and keeps the array alive (anything else is a ValueError).
"""
import os as _os


def _default_wait_policy():
    """OMP_WAIT_POLICY=PASSIVE unless the user chose a policy, as the attn binary does.

    libgomp reads the variable once, when it loads: setting it is useless (and would be
    misreported) when an earlier import (torch) already loaded libgomp.
    """
    if any(v in _os.environ for v in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "ATTN_DEFAULTED_ENV")):
        return
    try:
        with open("/proc/self/maps") as maps:
            if "libgomp" in maps.read():
                return
    except OSError:
        return
    _os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    _os.environ["ATTN_DEFAULTED_ENV"] = "OMP_WAIT_POLICY"


_default_wait_policy()

# Loading the extension also picks OpenBLAS's kernels from the CPU features
# (src/kernels/blas.cpp); a user's OPENBLAS_CORETYPE wins.
from ._attn import *  # noqa: F401,F403,E402
from ._attn import ShapeError, ValueError_ as ValueError, IoError, Error  # noqa: F401,E402
from ._attn import __version__  # noqa: F401,E402  (CMakeLists.txt's project version)
from ._tensor import ones, randn  # noqa: F401,E402  (and attn.Tensor's + - * / @, .sum(), .T, len)
import importlib as _importlib  # noqa: E402

# attn.nn: PyTorch's constructors, names and masks over the native modules (attn._attn.nn).
# import_module, since `from . import nn` would return the native submodule already bound.
nn = _importlib.import_module(".nn", __name__)
from . import safetensors  # noqa: F401,E402  (attn.safetensors.load / save: plain tensor dicts)
from .checkpoint import load, save  # noqa: F401,E402  (attn.load / attn.save: attn checkpoints)


def machine_report(sgemm_seconds=1.0):
    """CPU, vector ISA, GEMM kernels, a measured sgemm rate, threads, OpenMP wait policy and
    versions, as a dict: what `attn doctor --json` prints. sgemm_seconds=0 skips the timing."""
    import json

    from ._attn import _machine_report_json

    return json.loads(_machine_report_json(sgemm_seconds))
