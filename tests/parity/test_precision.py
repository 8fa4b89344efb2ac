"""precision= and attn.precision (docs/precision.md): the refusal (forced with ATTN_ISA=baseline
in a child process, so it runs on every machine), and, where the CPU runs bf16, attn's bf16
linear against torch's fp32 linear of the same inputs rounded to bf16 (the same products in
fp32: equal up to summation order), and a checkpoint decoded in both precisions."""
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
    with pytest.raises(attn.ValueError, match="precision: expected fp32 or bf16, got 'fp16'"):
        attn.set_precision("fp16")
    with pytest.raises(attn.ValueError, match="expected fp32 or bf16"):
        attn.precision("half")
    assert attn.get_precision() == "fp32"


def test_bf16_refused_below_the_avx512_level():
    code = ("import attn\n"
            "try:\n    attn.set_precision('bf16')\nexcept attn.ValueError as e:\n    print(e)\n"
            "print(attn.get_precision())\n")
    env = dict(os.environ, ATTN_ISA="baseline")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        "bf16 needs the avx512 kernel level (ATTN_ISA=baseline limits this process to SSE4.2); "
        "run with --precision fp32", "fp32"], out


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


@needs_bf16
def test_checkpoint_runs_in_both_precisions(tmp_path):
    """An fp32 checkpoint in bf16: its teacher-forced logits within the bf16 tolerance of
    tests/precision/bf16_test.cpp's models (5e-2 relative, 2-norm) of fp32's and not equal
    to them; translate(precision=...) runs it and restores the process's precision."""
    path = tmp_path / "model.safetensors"
    attn.save(attn.models.Seq2Seq('{"attention": "bahdanau", "hidden": 32, "emb": 16, "seed": 3}'), path)
    model = attn.load(path)
    src = attn.tensor(np.array([[5, 9, 3, 17, 4], [8, 8, 21, 0, 0]], dtype=np.int32))
    lengths = attn.tensor(np.array([5, 3], dtype=np.int32))
    tgt_in = attn.tensor(np.array([[1, 5, 9, 3], [1, 8, 8, 21]], dtype=np.int32))
    fp32 = model.logits(src, lengths, tgt_in)
    with attn.precision("bf16"):
        bf16 = model.logits(src, lengths, tgt_in)
    error = np.linalg.norm(bf16 - fp32) / np.linalg.norm(fp32)
    assert 1e-6 < error < 5e-2, error
    sources = [[5, 9, 3, 17, 4], [8, 8, 21]]
    assert len(model.translate(sources, beam=3, precision="bf16")) == 2
    assert attn.get_precision() == "fp32"
    with pytest.raises(attn.ValueError, match="expected fp32 or bf16"):
        model.translate(sources, precision="fp16")
