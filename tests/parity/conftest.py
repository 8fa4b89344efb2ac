import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import subprocess  # noqa: E402

import pytest  # noqa: E402


def pytest_configure(config):
    """ATTN_ISA naming a level this CPU lacks skips the whole suite: exit 77, the SKIP_RETURN_CODE
    of the per-level ctest entries (python/CMakeLists.txt). Any other import failure fails."""
    try:
        import attn  # noqa: F401
    except ImportError as e:
        if "this CPU lacks" in str(e):
            pytest.exit(f"SKIP: {e}", returncode=77)
        raise


def pytest_terminal_summary(terminalreporter):
    """The level the suite ran at, in the log (also under -q)."""
    import attn
    kernels = attn.machine_report(sgemm_seconds=0)["kernels"]
    terminalreporter.write_line(f"attn kernels: ISA level {kernels['isa']} ({kernels['isa_source']}; "
                                f"this CPU runs {' '.join(kernels['isa_available'])})")


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
