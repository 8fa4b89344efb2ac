"""`attn bleu` against sacreBLEU 2.6.0 itself (pinned in scripts/test-venv-requirements.txt):
corpus BLEU, tokenize 13a, cased and --lowercase, on system outputs that cover real
translations, empty hypotheses and references, Unicode punctuation and whitespace, case
that only Unicode lowercasing folds, and numbers; the n-gram counts and lengths must match
exactly, the score to 0.01 (sacreBLEU's own rounding). A hypothesis file shorter than the
reference is a one-line error."""
import gzip
import json
import os
import subprocess

import pytest

from peers import ATTN_BIN, damaged_copy, require_data, require_peer

sacrebleu = require_peer("sacrebleu", "2.6.0")

REFERENCES = [
    "Zwei junge Männer stehen „draußen“ – neben einem Zaun…",
    "A man's dog, the 1,000.5-meter race & “quotes”.",
    "ΣΑΣ and İstanbul: SCHÖNE Straße!",
    "Le chat (noir) dort; il est 10:30 — n'est-ce pas ?",
    "Wide　space\u00a0and\u2028line separator here.",
    "numbers 3-4 and -5 and 1.5.",
    "",  # sacreBLEU scores an empty reference line too
]

SYSTEMS = {
    "close": [
        "Zwei junge Männer stehen „draußen“ – neben dem Zaun…",
        "A man's dog , the 1,000.5-meter race & “quotes” .",
        "σας and i̇stanbul: schöne STRASSE!",
        "Le chat (noir) dort ; il est 10:30 — n'est-ce pas?",
        "Wide space and\u2028line separator here .",
        "numbers 3 - 4 and - 5 and 1.5",
        "something",
    ],
    "empty hypotheses": ["", "A man's dog", "", "Le chat", "", "", ""],
    "all empty": [""] * 7,
    "shuffled case": [
        "ZWEI JUNGE MÄNNER STEHEN „DRAUSSEN“",
        "a MAN'S DOG, THE 1,000.5-METER race &amp; “quotes”.",
        "ΣΑΣ AND İSTANBUL: schöne straße!",
        "le chat (NOIR) dort; IL EST 10:30 — N'EST-CE PAS ?",
        "wide　SPACE and line separator HERE.",
        "Numbers 3-4 And -5 And 1.5.",
        "",
    ],
}


def attn_bleu(ref_path, hyp_path, *options):
    return subprocess.run([ATTN_BIN, "bleu", "--ref", str(ref_path), "--hyp", str(hyp_path), "--json", *options],
                          capture_output=True, text=True)


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def check_equal(name, got, want):
    assert got["counts"] == want.counts and got["totals"] == want.totals, (name, got, want.counts, want.totals)
    assert (got["hyp_len"], got["ref_len"]) == (want.sys_len, want.ref_len), (name, got)
    assert abs(got["exact_score"] - want.score) <= 0.01, (name, got["exact_score"], want.score)


@pytest.mark.parametrize("lowercase", [False, True], ids=["cased", "lowercase"])
def test_attn_bleu_equals_sacrebleu(tmp_path, lowercase):
    ref = write_lines(tmp_path / "ref.txt", REFERENCES)
    metric = sacrebleu.BLEU(lowercase=lowercase, tokenize="13a")
    options = ["--lowercase"] if lowercase else []
    for name, hyps in SYSTEMS.items():
        result = attn_bleu(ref, write_lines(tmp_path / "hyp.txt", hyps), *options)
        assert result.returncode == 0, (name, result.stderr)
        got = json.loads(result.stdout)
        assert got["case"] == ("lc" if lowercase else "mixed")
        check_equal(name, got, metric.corpus_score(hyps, [REFERENCES]))


def test_attn_bleu_equals_sacrebleu_on_multi30k(tmp_path):
    """A real-sized system: test2016's English references against a damaged copy of
    themselves (every 3rd sentence's words reversed, every 5th cut short, every 7th empty)."""
    path = os.path.join(require_data("multi30k/raw/test_2016_flickr.en.gz"))
    with gzip.open(path, "rt", encoding="utf-8") as f:
        refs = f.read().splitlines()
    hyps = damaged_copy(refs)
    ref = write_lines(tmp_path / "ref.txt", refs)
    hyp = write_lines(tmp_path / "hyp.txt", hyps)
    for lowercase in (False, True):
        result = attn_bleu(ref, hyp, *(["--lowercase"] if lowercase else []))
        assert result.returncode == 0, result.stderr
        check_equal(f"multi30k lowercase={lowercase}", json.loads(result.stdout),
                    sacrebleu.BLEU(lowercase=lowercase).corpus_score(hyps, [refs]))


def test_short_hypothesis_file_is_an_error(tmp_path):
    ref = write_lines(tmp_path / "ref.txt", REFERENCES)
    hyp = write_lines(tmp_path / "hyp.txt", SYSTEMS["close"][:-2])
    result = attn_bleu(ref, hyp)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [f"attn: error: bleu: '{hyp}' has 5 lines but '{ref}' has 7"], result.stderr
