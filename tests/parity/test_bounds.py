"""Issue 18: sizes and values that Python hands to attn are checked, never wrapped or
truncated: an overflowing shape is an error naming it (it used to segfault or sum to 0)."""
import numpy as np
import pytest

import attn


def test_overflowing_shape_is_an_error_not_a_segfault():
    # (2^31, 2^31) float32 is 2^64 bytes: the byte count wrapped to 0 and tanh wrote past it.
    with pytest.raises(ValueError, match=r"shape \(2147483648, 2147483648\): too many elements"):
        attn.tanh(attn.zeros([2**31, 2**31]))


def test_overflowing_shape_does_not_sum_to_zero():
    # (2^32)^3 elements wrapped to 0, so the sum of "zeros" returned 0.0.
    with pytest.raises(ValueError, match=r"shape \(4294967296, 4294967296, 4294967296\)"):
        attn.sum(attn.zeros([2**32] * 3))


def test_negative_size_is_an_error():
    with pytest.raises(ValueError, match="negative dimension"):
        attn.zeros([2, -3])


def test_int64_outside_int32_is_an_error_not_truncated():
    # 2**40 used to become 0 (forcecast to int32).
    with pytest.raises(ValueError, match=r"integer 1099511627776 at flat index 1 does not fit in int32"):
        attn.tensor(np.array([1, 2**40], np.int64))
    with pytest.raises(ValueError, match="does not fit in int32"):
        attn.tensor(np.array([-(2**31) - 1], np.int64))
    with pytest.raises(ValueError, match="does not fit in int32"):
        attn.tensor(np.array([2**63], np.uint64))
    # In range: exact.
    t = attn.tensor(np.array([-(2**31), 2**31 - 1, 7], np.int64))
    assert t.dtype == "int32"
    assert t.numpy().tolist() == [-(2**31), 2**31 - 1, 7]


def test_float64_downcast_is_checked():
    with pytest.raises(ValueError, match=r"value 1e\+300 at flat index 0 is outside float32's range"):
        attn.tensor(np.array([1e300, 1.0]))
    # Rounded to nearest, as documented; inf and nan stay what they are.
    t = attn.tensor(np.array([0.1, np.inf, -np.inf, np.nan]))
    v = t.numpy()
    assert t.dtype == "float32"
    assert v[0] == np.float32(0.1) and np.isposinf(v[1]) and np.isneginf(v[2]) and np.isnan(v[3])


def test_complex_is_refused():
    with pytest.raises(ValueError, match="cannot convert a numpy array of dtype complex128"):
        attn.tensor(np.array([1 + 2j]))


def test_set_num_threads_zero_is_an_error():
    before = attn.num_threads()
    with pytest.raises(ValueError, match="set_num_threads: n must be >= 1, got 0"):
        attn.set_num_threads(0)
    assert attn.num_threads() == before
