"""What the tests that check attn against PyPI's packages share: the attn binary, the data
folder, and the pinned packages of the test venv (scripts/test-venv.sh). A missing or
different package is an error, never a skip: those checks must run in CI."""
import importlib
import os

import pytest

import attn

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("ATTN_DATA_DIR", os.path.join(HERE, "..", "..", "..", "shared", "data"))
ATTN_BIN = os.environ.get("ATTN_BIN", os.path.join(os.path.dirname(attn.__file__), "..", "..", "attn"))


def require_peer(name, version):
    """The module `name` at exactly `version`; ImportError saying how to get it otherwise."""
    how = ("run the parity suite with the test venv's python: "
           "$(bash scripts/test-venv.sh) -m pytest tests/parity (scripts/test.sh does)")
    try:
        module = importlib.import_module(name)
    except ImportError as e:
        raise ImportError(f"{name}=={version} is not installed ({e}); {how}") from e
    if module.__version__ != version:
        raise ImportError(f"{name} is {module.__version__}, the tests pin {version}; {how}")
    return module


def require_data(relative):
    """The path of a file of the shared data sets: skipped when absent, failed when
    ATTN_REQUIRE_DATA=1 (CI, where the data is there)."""
    path = os.path.join(DATA, relative)
    if not os.path.exists(path):
        message = f"no {relative} under {DATA}"
        if os.environ.get("ATTN_REQUIRE_DATA") == "1":
            pytest.fail("ATTN_REQUIRE_DATA is set but there is " + message)
        pytest.skip(message)
    assert os.path.exists(ATTN_BIN), f"the attn binary is not at {ATTN_BIN} (set ATTN_BIN)"
    return path


def damaged_copy(lines):
    """A system output made from references: every 3rd line's words reversed, every 5th cut
    to its first half, every 7th empty (the metric tests' real-sized system)."""
    hyps = []
    for i, line in enumerate(lines):
        words = line.split()
        if i % 7 == 0:
            words = []
        elif i % 3 == 0:
            words = words[::-1]
        elif i % 5 == 0:
            words = words[: len(words) // 2]
        hyps.append(" ".join(words))
    return hyps
