import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import subprocess  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def multi30k_transformer(tmp_path_factory):
    """model.safetensors of a small Transformer translator trained on Multi30k de-en in a few
    seconds, shared by the tests that need a real one (the CTranslate2 export, safetensors):
    trained enough that its greedy translations of test2016 differ from sentence to sentence."""
    from peers import ATTN_BIN, DATA, require_data
    require_data("multi30k/raw/train.de.gz")
    data = os.path.join(DATA, "multi30k")
    out = tmp_path_factory.mktemp("multi30k") / "run"
    subprocess.run([ATTN_BIN, "train", "--task", "translate", "--model", "transformer", "--data", data,
                    "--train-limit", "3000", "--vocab-size", "400", "--max-tokens", "1000", "--steps", "400",
                    "--lr", "1e-2", "--warmup", "20", "--eval-every", "400", "--eval-sentences", "10",
                    "--d-model", "32", "--heads", "2", "--ffn", "64", "--enc-layers", "1", "--dec-layers", "1",
                    "--threads", "2", "--out", str(out)], check=True, capture_output=True)
    return out / "model.safetensors"
