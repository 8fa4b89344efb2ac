"""The comparison itself (parity.assert_close): its atol scales with the compared tensor, so
rounding next to zero inside a large tensor passes, yet a real error of 1e-3 relative still
fails. A check that cannot fail would prove nothing."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attn
from parity import assert_close, randn, to_attn, to_torch


def test_rounding_near_zero_inside_a_large_gradient_passes():
    # The case of issue 22 (test_luong concat B4-T3-S9, grad v, OpenBLAS Prescott kernels):
    # elements up to 22, the worst one -0.0369 off by 2.26e-5. A per-element tolerance of
    # 1e-5 + 1e-4 * 0.0369 = 1.4e-5 failed it; the scaled atol (1e-5 * 22) holds.
    expected = np.array([22.0, -3.5, 0.7, -0.036856479942798615], np.float32)
    actual = expected.copy()
    actual[3] = np.float32(-0.03687906265258789)
    assert_close("attention", "issue 22", "grad v", actual, expected)
    with pytest.raises(AssertionError, match="grad v"):  # the old per-element rule
        assert_close("attention", "issue 22", "grad v", actual, expected, scale=1.0)


def linear_gradients():
    """attn's and torch's gradient of a linear layer's weight (a BLAS product of 64 rows),
    with inputs of magnitude 10: elements up to ~100."""
    x, w, dy = randn(1, 64, 48, scale=10.0), randn(2, 32, 48), randn(3, 64, 32)
    xa, wa = to_attn(x), to_attn(w, True)
    attn.backward(attn.linear(xa, wa, None), dy)
    wt = to_torch(w, True)
    F.linear(to_torch(x), wt).backward(torch.tensor(dy))
    return wa.grad.numpy(), wt.grad


def test_attn_gradient_passes():
    got, want = linear_gradients()
    assert_close("linear", "magnitude 10", "grad weight", got, want)


def test_gradient_off_by_1e3_relative_fails():
    got, want = linear_gradients()
    with pytest.raises(AssertionError, match="grad weight"):
        assert_close("linear", "scaled by 1 + 1e-3", "grad weight", got * np.float32(1 + 1e-3), want)


def test_one_element_off_by_1e3_of_the_scale_fails():
    got, want = linear_gradients()
    small = np.unravel_index(np.argmin(np.abs(got)), got.shape)  # the element nearest zero
    bad = got.copy()
    bad[small] += np.float32(1e-3 * np.abs(got).max())
    with pytest.raises(AssertionError, match=r"worst at index \(\d+, \d+\)"):
        assert_close("linear", "one element", "grad weight", bad, want)
