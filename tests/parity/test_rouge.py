"""`attn rouge` against Google's rouge-score itself (pinned in scripts/test-venv-requirements.txt):
mean ROUGE-1/2/L precision, recall and F1 as RougeScorer(["rouge1", "rouge2", "rougeL"],
use_stemmer=False) scores each pair, on summaries with case, punctuation, numbers, letters
outside ASCII (which rouge-score drops), repeated words, empty hypotheses and references, and
on Multi30k's English test set against a damaged copy of itself. Equal to 1e-9 (the same
counts, a mean in another order)."""
import gzip
import importlib.metadata
import json
import os
import subprocess

import pytest

from peers import ATTN_BIN, damaged_copy, require_data

PIN = "0.0.4"
try:
    from rouge_score import rouge_scorer
except ImportError as e:
    raise ImportError(f"rouge-score=={PIN} is not installed ({e}); run the parity suite with the test venv's "
                      "python: $(bash scripts/test-venv.sh) -m pytest tests/parity (scripts/test.sh does)") from e
if importlib.metadata.version("rouge-score") != PIN:
    raise ImportError(f"rouge-score is {importlib.metadata.version('rouge-score')}, the tests pin {PIN}")

TYPES = ["rouge1", "rouge2", "rougeL"]

REFERENCES = [
    "Police killed the gunman after a two-hour stand-off, officials said.",
    "The cat sat on the mat; the cat was happy.",
    "Zwei junge Männer stehen draußen — İstanbul's ΣΑΣ, 1,000.5 km!",
    "Prices rose 3.5% in May, the highest since 2008.",
    "",
    "one",
]
HYPOTHESES = [
    "the gunman was killed by police after a stand-off",
    "The cat the cat the cat sat.",
    "zwei junge MÄNNER stehen draussen in istanbul 1000.5 km",
    "prices rose in may",
    "something",
    "",
]


def attn_rouge(tmp_path, hyps, refs):
    ref = tmp_path / "ref.txt"
    hyp = tmp_path / "hyp.txt"
    ref.write_text("".join(line + "\n" for line in refs), encoding="utf-8")
    hyp.write_text("".join(line + "\n" for line in hyps), encoding="utf-8")
    result = subprocess.run([ATTN_BIN, "rouge", "--ref", str(ref), "--hyp", str(hyp), "--json"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def check_equal(got, hyps, refs):
    scorer = rouge_scorer.RougeScorer(TYPES, use_stemmer=False)
    scores = [scorer.score(ref, hyp) for hyp, ref in zip(hyps, refs)]
    assert got["sentences"] == len(hyps) and got["stemming"] is False, got
    for name in TYPES:
        for field in ("precision", "recall", "fmeasure"):
            want = 100 * sum(getattr(s[name], field) for s in scores) / len(scores)
            have = got[name]["f1" if field == "fmeasure" else field]
            assert abs(have - want) <= 1e-9, (name, field, have, want)


def test_attn_rouge_equals_rouge_score(tmp_path):
    assert ATTN_BIN and os.path.exists(ATTN_BIN), f"the attn binary is not at {ATTN_BIN} (set ATTN_BIN)"
    check_equal(attn_rouge(tmp_path, HYPOTHESES, REFERENCES), HYPOTHESES, REFERENCES)
    # One pair at a time too: a sentence's own score, not only the mean.
    for hyp, ref in zip(HYPOTHESES, REFERENCES):
        check_equal(attn_rouge(tmp_path, [hyp], [ref]), [hyp], [ref])


def test_attn_rouge_equals_rouge_score_on_multi30k(tmp_path):
    """test2016's English references against a damaged copy of themselves (every 3rd
    sentence's words reversed, every 5th cut short, every 7th empty)."""
    path = require_data("multi30k/raw/test_2016_flickr.en.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        refs = f.read().splitlines()
    hyps = damaged_copy(refs)
    check_equal(attn_rouge(tmp_path, hyps, refs), hyps, refs)
