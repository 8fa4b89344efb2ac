"""The Python module runs OpenBLAS with the kernels attn picks from the CPU features, also when
torch (which loads the same OpenBLAS first) was imported before attn, and a user's
OPENBLAS_CORETYPE wins. Each case runs in a fresh interpreter: the choice happens at import."""
import json
import os
import subprocess
import sys

import pytest

PROBE = """
import ctypes, json, sys
{pre}
import attn
report = attn.machine_report(sgemm_seconds=0)
active = None
for line in open('/proc/self/maps'):
    if 'libopenblas' in line:
        lib = ctypes.CDLL(line.split()[-1])
        lib.openblas_get_corename.restype = ctypes.c_char_p
        active = lib.openblas_get_corename().decode()
        break
print(json.dumps({{'report': report, 'active': active}}))
"""


def probe(pre="", **env):
    environment = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    environment.update(env)
    out = subprocess.run([sys.executable, "-c", PROBE.format(pre=pre)], env=environment, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("pre", ["", "import torch"])
def test_kernels_follow_cpu_features(pre):
    got = probe(pre)
    gemm = got["report"]["gemm"]
    assert got["active"] == gemm["kernel"], got
    assert gemm["kernel_best"], gemm
    # attn switches whenever OpenBLAS's own pick ranks below the features' best; a pick of the
    # same rank (e.g. Bulldozer for Sandybridge) is kept, and then no warning is given.
    assert got["report"]["warning"] is None, got["report"]
    if gemm["kernel"] != gemm["kernel_best"]:
        assert gemm["kernel_source"].startswith("OpenBLAS's own pick"), gemm


def test_user_coretype_wins():
    got = probe(OPENBLAS_CORETYPE="Prescott")
    assert got["active"] == "Prescott"
    assert got["report"]["gemm"]["kernel_source"] == "OPENBLAS_CORETYPE=Prescott set by the user"
    if got["report"]["gemm"]["kernel_best"] != "Prescott":
        assert "below what this CPU supports" in got["report"]["warning"]


def test_wait_policy_default_and_user_value():
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "ATTN_DEFAULTED_ENV")}
    code = "import attn, json; print(json.dumps(attn.machine_report(sgemm_seconds=0)['omp_wait_policy']))"
    run = lambda e: json.loads(subprocess.run([sys.executable, "-c", code], env=e, check=True, capture_output=True,
                                              text=True).stdout)
    assert run(env) == {"value": "PASSIVE", "source": "attn default"}
    assert run(dict(env, OMP_WAIT_POLICY="ACTIVE")) == {"value": "ACTIVE", "source": "set by the user"}
