"""sparsemax / entmax15 / entmax_bisect against the `entmax` package (1.3, PyPI), forward and
backward, on random and adversarial rows: ties, one large value, all equal, length 1, keep-masks
with a fully masked row, and -inf scores. The reference runs the package on each row's kept,
finite entries only (the package gives NaN for -inf and for a row with nothing left: its issues
#16, #17, #30); attn must give zeros and zero gradients there."""
import entmax
import numpy as np
import pytest
import torch

import attn
from parity import assert_close, assert_grads, randn, rng, to_attn, to_torch

NORMALIZERS = {
    "sparsemax": (lambda x, m: attn.sparsemax(x, m), lambda z: entmax.sparsemax(z, dim=-1)),
    "entmax15": (lambda x, m: attn.entmax15(x, m), lambda z: entmax.entmax15(z, dim=-1)),
    "entmax_bisect_1.5": (lambda x, m: attn.entmax_bisect(x, 1.5, m), lambda z: entmax.entmax_bisect(z, 1.5)),
    "entmax_bisect_1.25": (lambda x, m: attn.entmax_bisect(x, 1.25, m), lambda z: entmax.entmax_bisect(z, 1.25)),
    "entmax_bisect_2": (lambda x, m: attn.entmax_bisect(x, 2.0, m), lambda z: entmax.entmax_bisect(z, 2.0)),
    "entmax_bisect_3": (lambda x, m: attn.entmax_bisect(x, 3.0, m), lambda z: entmax.entmax_bisect(z, 3.0)),
}


def rows(kind):
    """(x, mask or None) of shape (R, N) for each kind of row."""
    if kind == "random":
        return randn(1, 6, 9, scale=2.0), None
    if kind == "large_magnitude":
        return randn(2, 4, 7, scale=300.0), None
    if kind == "ties":
        return np.array([[1.0, 1.0, 0.5, 1.0, -2.0], [3.0, 3.0, 3.0, 0.0, 0.0], [0.2, -0.1, 0.2, -0.1, 0.2]],
                        np.float32), None
    if kind == "one_large":
        return np.array([[40.0, 0.1, -0.3, 0.2], [-1.0, 0.0, 25.0, 0.5]], np.float32), None
    if kind == "all_equal":
        return np.full((3, 6), 0.7, np.float32), None
    if kind == "length_1":
        return np.array([[-3.0], [5.0]], np.float32), None
    if kind == "masked":
        x = randn(3, 5, 8)
        m = (rng(4).random((5, 8)) > 0.35).astype(np.int32)
        m[0] = 0            # fully masked
        m[1] = 0
        m[1, 6] = 1         # one kept entry
        x[m == 0] = np.nan  # masked scores are never read
        return x, m
    if kind == "minus_inf":
        x = randn(5, 4, 6)
        x[0, [1, 4]] = -np.inf
        x[1] = -np.inf      # every score -inf: zeros
        x[2, :5] = -np.inf  # one finite score left
        return x, None
    raise ValueError(kind)


def reference(fn, x, mask, dy):
    """The package on each row's kept finite entries; (y, dx) as numpy."""
    y, dx = np.zeros_like(x), np.zeros_like(x)
    for r in range(x.shape[0]):
        keep = np.isfinite(x[r]) if mask is None else (mask[r] != 0) & np.isfinite(x[r])
        if not keep.any():
            continue
        z = torch.tensor(x[r][keep][None, :], requires_grad=True)
        out = fn(z)
        out.backward(torch.tensor(dy[r][keep][None, :]))
        y[r, keep] = out.detach().numpy()[0]
        dx[r, keep] = z.grad.numpy()[0]
    return y, dx


@pytest.mark.parametrize("name", list(NORMALIZERS))
@pytest.mark.parametrize("kind", ["random", "large_magnitude", "ties", "one_large", "all_equal", "length_1", "masked",
                                  "minus_inf"])
def test_normalizer_matches_entmax_package(name, kind):
    ours, theirs = NORMALIZERS[name]
    x, mask = rows(kind)
    dy = randn(9, *x.shape)
    xa = to_attn(x, True)
    ya = ours(xa, None if mask is None else attn.tensor(mask))
    attn.backward(ya, dy)
    y_ref, dx_ref = reference(theirs, x, mask, dy)
    case = f"rows={kind}"
    out = ya.numpy()
    assert not np.isnan(out).any(), f"{name} [{case}]: NaN in output"
    assert_close(name, case, "output", out, y_ref)
    xt = to_torch(x, True)  # carries the reference gradient for assert_grads
    xt.grad = torch.tensor(dx_ref)
    assert_grads(name, case, [("x", xa, xt)])
    dropped = ~np.isfinite(x) if mask is None else (mask == 0) | ~np.isfinite(x)
    assert np.all(out[dropped] == 0), f"{name} [{case}]: masked / -inf positions must be exactly 0"
    g = xa.grad.numpy() if xa.grad is not None else np.zeros_like(x)
    assert np.all(g[dropped] == 0), f"{name} [{case}]: masked / -inf positions must get no gradient"
    if kind in ("ties", "one_large", "random") and name != "entmax_bisect_1.25":
        assert (out == 0).any(), f"{name} [{case}]: a sparse normaliser gives exact zeros on these rows"


def test_alpha_out_of_range_is_refused():
    x = attn.tensor(np.zeros((2, 3), np.float32))
    for alpha in (1.0, 0.5, float("nan"), float("inf")):
        with pytest.raises(attn.ValueError, match="alpha must be finite and > 1"):
            attn.entmax_bisect(x, alpha)
