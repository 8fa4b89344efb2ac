"""precision= and attn.precision (docs/precision.md): the refusals (forced with ATTN_ISA=baseline
in a child process, so they run on every machine); where the CPU runs bf16, attn's bf16 linear
against torch's fp32 linear of the same inputs rounded to bf16 (the same products in fp32: equal
up to summation order); where it runs int8, attn's int8 linear against a numpy reference of the
scheme and against torch's dynamic quantization; a checkpoint decoded in each precision."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attn
from parity import assert_close, randn, to_attn, to_torch


def bf16_missing():
    """'' when this process runs bf16, else the refusal line."""
    try:
        with attn.precision("bf16"):
            return ""
    except attn.ValueError as e:
        return str(e)


needs_bf16 = pytest.mark.skipif(bool(bf16_missing()), reason=bf16_missing() or "bf16 runs")


def test_unknown_name_is_refused():
    with pytest.raises(attn.ValueError, match="precision: expected fp32, bf16 or int8, got 'fp16'"):
        attn.set_precision("fp16")
    with pytest.raises(attn.ValueError, match="expected fp32, bf16 or int8"):
        attn.precision("half")
    assert attn.get_precision() == "fp32"


def refusal_at_baseline(precision):
    """The lines a child process at ATTN_ISA=baseline prints: set_precision's refusal, then the precision."""
    code = ("import attn\n"
            f"try:\n    attn.set_precision('{precision}')\nexcept attn.ValueError as e:\n    print(e)\n"
            "print(attn.get_precision())\n")
    env = dict(os.environ, ATTN_ISA="baseline")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.splitlines()


def test_bf16_refused_below_the_avx512_level():
    assert refusal_at_baseline("bf16") == [
        "bf16 needs the avx512 kernel level (ATTN_ISA=baseline limits this process to SSE4.2); "
        "run with --precision fp32", "fp32"]


@needs_bf16
@pytest.mark.parametrize("lead,inp,out", [((4,), 48, 40), ((2, 3), 70, 33)])
def test_bf16_linear_is_torch_fp32_of_rounded_inputs(lead, inp, out):
    x, w, b = randn(1, *lead, inp), randn(2, out, inp), randn(3, out)
    with attn.precision("bf16"):
        assert attn.get_precision() == "bf16"
        ya = attn.linear(to_attn(x), to_attn(w), to_attn(b))
    assert attn.get_precision() == "fp32"
    rounded = [to_torch(a).bfloat16().float() for a in (x, w)]
    yt = F.linear(rounded[0], rounded[1], to_torch(b))
    assert_close("linear", f"bf16 lead={lead} in={inp} out={out}", "output", ya, yt)
    # and it is not the fp32 result: bf16 ran
    y32 = F.linear(to_torch(x), to_torch(w), to_torch(b)).numpy()
    assert np.abs(np.asarray(ya) - y32).max() > 1e-4


def checkpoint_in(precision, tmp_path, tolerance):
    """An fp32 checkpoint at `precision`: its teacher-forced logits within `tolerance` (relative,
    2-norm) of fp32's and not equal to them; translate(precision=...) runs it and restores the
    process's precision. Returns the model."""
    path = tmp_path / "model.safetensors"
    attn.save(attn.models.Seq2Seq('{"attention": "bahdanau", "hidden": 32, "emb": 16, "seed": 3}'), path)
    model = attn.load(path)
    src = attn.tensor(np.array([[5, 9, 3, 17, 4], [8, 8, 21, 0, 0]], dtype=np.int32))
    lengths = attn.tensor(np.array([5, 3], dtype=np.int32))
    tgt_in = attn.tensor(np.array([[1, 5, 9, 3], [1, 8, 8, 21]], dtype=np.int32))
    fp32 = model.logits(src, lengths, tgt_in)
    with attn.precision(precision):
        other = model.logits(src, lengths, tgt_in)
    error = np.linalg.norm(other - fp32) / np.linalg.norm(fp32)
    assert 1e-6 < error < tolerance, error
    sources = [[5, 9, 3, 17, 4], [8, 8, 21]]
    assert len(model.translate(sources, beam=3, precision=precision)) == 2
    assert attn.get_precision() == "fp32"
    return model


@needs_bf16
def test_checkpoint_runs_in_both_precisions(tmp_path):
    """bf16 within the bf16 tolerance of tests/precision/bf16_test.cpp's models (5e-2)."""
    model = checkpoint_in("bf16", tmp_path, 5e-2)
    with pytest.raises(attn.ValueError, match="expected fp32, bf16 or int8"):
        model.translate([[5, 9, 3]], precision="fp16")


# ---- int8 (inference) --------------------------------------------------------------------------

def int8_missing():
    """'' when this process runs int8, else the refusal line."""
    try:
        with attn.precision("int8"):
            return ""
    except attn.ValueError as e:
        return str(e)


needs_int8 = pytest.mark.skipif(bool(int8_missing()), reason=int8_missing() or "int8 runs")


def test_int8_refused_at_the_baseline_level():
    lines = refusal_at_baseline("int8")
    assert len(lines) == 2 and lines[0].startswith("int8 needs ") and lines[1] == "fp32", lines


def quantize_symmetric(v, axis):
    """docs/precision.md's scheme: s8 per slice along `axis`, scale max|v| / 127,
    q = round-half-even(v * (127 / max|v|)) in float32 arithmetic; a zero slice gets scale 0."""
    v = np.asarray(v, dtype=np.float32)
    amax = np.abs(v).max(axis=axis, keepdims=True)
    inverse = np.where(amax > 0, np.float32(127) / np.where(amax > 0, amax, 1), 0).astype(np.float32)
    return np.rint(v * inverse).astype(np.int64), (amax / np.float32(127)).astype(np.float64)


def int8_linear_reference(x, w, b):
    """y = dequant(quant_rows(x) quant_rows(w)ᵀ) + b: the same integer sums as attn's int8 GEMM."""
    x2 = x.reshape(-1, x.shape[-1])
    qx, sx = quantize_symmetric(x2, 1)
    qw, sw = quantize_symmetric(w, 1)
    y = (qx @ qw.T).astype(np.float64) * sx * sw.T + b
    return y.reshape(*x.shape[:-1], w.shape[0])


@needs_int8
@pytest.mark.parametrize("lead,inp,out", [((4,), 48, 40), ((2, 3), 70, 33)])
def test_int8_linear_is_the_documented_scheme(lead, inp, out):
    """attn's int8 linear against a numpy reference of the exact scheme (per-row s8 activations,
    per-channel s8 weights, exact integer sums): equal up to the fp32 rounding of the
    dequantization (1e-6 of the largest output)."""
    x, w, b = randn(1, *lead, inp), randn(2, out, inp), randn(3, out)
    with attn.precision("int8"):
        ya = np.asarray(attn.linear(to_attn(x), to_attn(w), to_attn(b)))
    assert attn.get_precision() == "fp32"
    ref = int8_linear_reference(np.asarray(x), np.asarray(w), np.asarray(b))
    assert np.abs(ya - ref).max() <= 1e-6 * np.abs(ref).max()
    y32 = F.linear(to_torch(x), to_torch(w), to_torch(b)).numpy()
    assert 1e-5 < np.linalg.norm(ya - y32) / np.linalg.norm(y32) < 2e-2


@needs_int8
def test_int8_linear_against_torch_dynamic_quantization():
    """PyTorch 1.13's dynamic quantization of an nn.Linear (per-channel s8 weights; the x86
    engine, fbgemm or, in Debian's torch, onednn) is not the same scheme: its activations are u8
    per tensor with a zero point and reduce_range (7 bits), so its error is about twice attn's.
    attn within its one-GEMM tolerance (2e-2, relative in the 2-norm) of fp32, torch within
    twice that, the two within twice that of each other, and attn's per-row scales the closer."""
    engines = torch.backends.quantized.supported_engines
    engine = "fbgemm" if "fbgemm" in engines else "onednn"
    if engine not in engines:
        pytest.skip(f"this torch has no x86 quantized engine: {engines}")
    x, w, b = randn(4, 16, 96), randn(5, 64, 96), randn(6, 64)
    linear = torch.nn.Linear(96, 64)
    with torch.no_grad():
        linear.weight.copy_(to_torch(w))
        linear.bias.copy_(to_torch(b))
    previous = torch.backends.quantized.engine
    torch.backends.quantized.engine = engine
    try:
        qlinear = torch.ao.quantization.quantize_dynamic(
            torch.nn.Sequential(linear), {torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig},
            dtype=torch.qint8)
        with torch.no_grad():
            yt = qlinear(to_torch(x)).numpy()
    finally:
        torch.backends.quantized.engine = previous
    with torch.no_grad():
        y32 = linear(to_torch(x)).numpy()
    with attn.precision("int8"):
        ya = np.asarray(attn.linear(to_attn(x), to_attn(w), to_attn(b)))

    def error(a, ref):
        return np.linalg.norm(a - ref) / np.linalg.norm(ref)

    assert error(ya, y32) < 2e-2 and error(yt, y32) < 4e-2, (error(ya, y32), error(yt, y32))
    assert error(ya, yt) < 4e-2, error(ya, yt)
    assert error(ya, y32) < error(yt, y32), (error(ya, y32), error(yt, y32))


@needs_int8
def test_int8_checkpoint_and_refusals(tmp_path):
    """int8 within tests/precision/int8_test.cpp's model tolerance (6e-2); a recorded gradient
    is refused."""
    checkpoint_in("int8", tmp_path, 6e-2)
    w = to_attn(randn(7, 8, 16), requires_grad=True)
    with attn.precision("int8"), pytest.raises(attn.ValueError, match="int8 is for inference"):
        attn.linear(to_attn(randn(8, 3, 16)), w, to_attn(randn(9, 8)))
