#!/usr/bin/env bash
# Installs attn's build, test and benchmark dependencies from Debian 12's archive, then the
# test suite's pinned PyPI packages (scripts/test-venv.sh: sacreBLEU, safetensors, CTranslate2,
# entmax in a venv outside the clone). Idempotent and non-interactive: apt-get update runs
# only when a package is missing, pip only when the venv is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  ccache                       # compiler cache (CMakeLists.txt): a fresh clone reuses objects of earlier builds
  libopenblas-openmp-dev       # CBLAS GEMM, OpenMP threading (no pthread oversubscription)
  libgtest-dev libgmock-dev libbenchmark-dev
  libdnnl-dev                  # oneDNN's matmul: the bf16 GEMMs (--precision bf16); the benches' GRU anchor and GEMM limits
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libcairo2-dev fonts-dejavu-core   # plots and heatmaps (cairo text uses DejaVu Sans)
  zlib1g-dev                   # reading the gzip-compressed data sets
  libcurl4-openssl-dev libssl-dev   # attn data get: downloads (libcurl) and their SHA-256 (libcrypto)
  libarchive-dev               # attn data get: unpacking Tatoeba's zip and CMUdict's npm .tgz
  libsentencepiece-dev         # subword tokenisation (attn tokenize, translation)
  libicu-dev                   # Unicode lowercasing (attn bleu --lowercase, as sacreBLEU)
  espeak-ng libfftw3-dev libsndfile1-dev   # attn data speech: spoken sentences (espeak-ng), log-mel (FFTW, libsndfile)
  libopenmpi-dev openmpi-bin   # data-parallel training: mpirun -np N attn train (docs/distributed.md)
  python3-dev pybind11-dev python3-numpy python3-pytest python3-torch
  # `pip install .` / `python3 -m build --wheel` of the Python package (setup.py, pyproject.toml)
  python3-pip python3-setuptools python3-wheel python3-build python3-venv
  # the browser tests of `attn view` (tests/browser): Debian's chromium, driven by
  # playwright-core from npm (tests/browser/package-lock.json), which downloads no browser
  chromium                     # (nodejs and npm: below)
  clang-15 libfuzzer-15-dev    # the libFuzzer targets in fuzz/ (scripts/fuzz.sh, docs/fuzzing.md)
  clang-format-15              # the C++ style check (scripts/format.sh, ctest format/*)
)

# Node.js and npm from Debian unless a node and npm are already on PATH: a machine with
# another Node.js (NodeSource's, which bundles npm) cannot take Debian's npm package beside it.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  packages+=(nodejs npm)
fi

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]} > 0)); then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

bash "$(dirname "${BASH_SOURCE[0]}")/test-venv.sh" >/dev/null
