#!/usr/bin/env bash
# attn doctor and attn --version: what the machine gives attn, which GEMM kernels run and who
# chose them, the OpenMP wait policy, and the bad inputs (a user's OPENBLAS_CORETYPE wins and
# is reported, a bogus one too). Works with no data and no write access.
# Usage: doctor_test.sh path/to/attn
set -uo pipefail
attn="$(realpath "$1")"
source "$(dirname "$0")/lib.sh"
unset OPENBLAS_CORETYPE ATTN_ISA
# field JSON PATH: one field of a JSON object ("gemm.kernel").
field() { python3 -c 'import json,sys; v=json.loads(sys.argv[1]); [v:=v[k] for k in sys.argv[2].split(".")]; print(v)' "$1" "$2"; }

expect 0 "(commit " -- "$attn" --version
[[ "$("$attn" --version)" =~ ^attn\ [0-9]+\.[0-9]+\.[0-9]+\ \(commit\ [^\)]+\)$ ]] || fail "--version: $("$attn" --version)"
commit="$("$attn" --version | sed -n 's/.*(commit \(.*\))/\1/p')"
[[ "$commit" =~ ^([0-9a-f]{7,40}(-modified)?|unknown)$ ]] || fail "--version commit '$commit' is neither a hash nor 'unknown'"

# No data, no write access: a read-only working directory and no HOME.
mkdir "$work/ro" && chmod 555 "$work/ro"
out="$(cd "$work/ro" && env -u HOME ATTN_DATA_DIR=/nonexistent "$attn" doctor --seconds 0.2 2>&1)"; rc=$?
[[ $rc == 0 ]] || fail "doctor exited $rc in a read-only folder: $out"
for line in "cpu " "vector isa " "gemm        OpenBLAS" "sgemm " "threads " "openmp " "libraries   OpenBLAS"; do
  [[ "$out" == *"$line"* ]] || fail "doctor lacks '$line': $out"
done
[[ "$out" == *"GFLOP/s"* ]] || fail "doctor measured no sgemm rate: $out"

json="$("$attn" doctor --json --seconds 0.2)" || fail "doctor --json failed"
kernel="$(field "$json" gemm.kernel)"; best="$(field "$json" gemm.kernel_best)"
[[ -n "$best" && "$(field "$json" warning)" == None ]] || fail "kernel $kernel (best $best) warned: $json"
# attn's pick is the features' best, unless OpenBLAS's own pick ranks as high (then it is kept).
[[ "$kernel" == "$best" || "$(field "$json" gemm.kernel_source)" == "OpenBLAS's own pick"* ]] ||
  fail "kernel $kernel is neither the CPU features' best ($best) nor an equal OpenBLAS pick: $json"
[[ "$(field "$json" sgemm.measured)" == True ]] || fail "--json lacks the sgemm rate: $json"
python3 -c "import sys; e=float(sys.argv[1]); sys.exit(0 if 0 <= e < 1e-5 else 1)" \
  "$(field "$json" sgemm.max_relative_error)" || fail "sgemm disagrees with float64: $json"
[[ "$(field "$json" attn.commit)" == "$commit" ]] || fail "doctor's commit differs from --version's"

expect 0 " | OpenBLAS " -- "$attn" doctor --summary --seconds 0.1
[[ "$("$attn" doctor --summary --seconds 0 | wc -l)" == 1 ]] || fail "--summary is not one line"
expect 2 "excludes" -- "$attn" doctor --summary --json

# A user's OPENBLAS_CORETYPE wins; doctor says so, and warns when it is below the CPU's best.
json="$(OPENBLAS_CORETYPE=Prescott "$attn" doctor --json --seconds 0)"
[[ "$(field "$json" gemm.kernel)" == Prescott ]] || fail "OPENBLAS_CORETYPE=Prescott did not win: $json"
[[ "$(field "$json" gemm.kernel_source)" == "OPENBLAS_CORETYPE=Prescott set by the user" ]] || fail "source: $json"
if [[ "$best" != Prescott ]]; then
  expect 0 "warning: GEMM kernels Prescott are below what this CPU supports ($best): unset OPENBLAS_CORETYPE" -- \
    env OPENBLAS_CORETYPE=Prescott "$attn" doctor --seconds 0
  [[ "$(OPENBLAS_CORETYPE=Prescott "$attn" doctor --seconds 0 | grep -c warning)" == 1 ]] || fail "not one warning line"
fi
# A bogus value is reported, not crashed on.
expect 0 "OPENBLAS_CORETYPE=bogus set by the user names no core in this OpenBLAS" -- \
  env OPENBLAS_CORETYPE=bogus "$attn" doctor --seconds 0

# The OpenMP wait policy: attn's default (libgomp itself reports it), or the user's.
out="$(env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u ATTN_DEFAULTED_ENV OMP_DISPLAY_ENV=true "$attn" doctor --seconds 0 2>&1)"
[[ "$out" == *"OMP_WAIT_POLICY = 'PASSIVE'"* ]] || fail "libgomp did not start PASSIVE: $out"
[[ "$out" == *"openmp      OMP_WAIT_POLICY=PASSIVE (attn default)"* ]] || fail "default policy not reported: $out"
expect 0 "openmp      OMP_WAIT_POLICY=ACTIVE (set by the user)" -- env OMP_WAIT_POLICY=ACTIVE "$attn" doctor --seconds 0
expect 0 "openmp      GOMP_SPINCOUNT=10000 (set by the user)" -- \
  env -u OMP_WAIT_POLICY -u ATTN_DEFAULTED_ENV GOMP_SPINCOUNT=10000 "$attn" doctor --seconds 0

# The kernels' ISA level: the best this CPU runs, or ATTN_ISA's; a level the CPU lacks and an
# unknown name are one error line each (never a SIGILL).
levels="$(python3 -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])["kernels"]["isa_available"]))' "$json")"
[[ "$levels" == baseline* ]] || fail "the baseline level is not available: '$levels'"
[[ "$(field "$json" kernels.isa)" == "${levels##* }" ]] || fail "kernels do not run the best level ($levels): $json"
[[ "$(field "$json" kernels.isa_source)" == "best for this CPU" ]] || fail "ISA source: $json"
expect 0 "| kernels ${levels##* } (of $levels) |" -- env -u ATTN_ISA "$attn" doctor --summary --seconds 0
expect 0 "kernels     ${levels##* } (of $levels): attn's own kernels" -- env -u ATTN_ISA "$attn" doctor --seconds 0
for level in $levels; do
  expect 0 "| kernels $level (of $levels, set by ATTN_ISA) |" -- env ATTN_ISA="$level" "$attn" doctor --summary --seconds 0
done
for level in avx2 avx512; do
  [[ " $levels " == *" $level "* ]] && continue
  expect 1 "attn: error: ATTN_ISA=$level: this CPU lacks " -- env ATTN_ISA="$level" "$attn" doctor --seconds 0
  [[ "$(ATTN_ISA="$level" "$attn" doctor --seconds 0 2>&1 | wc -l)" == 1 ]] || fail "ATTN_ISA=$level: not one line"
done
expect 1 "attn: error: ATTN_ISA=avx3 is not a level: expected baseline, avx2 or avx512" -- \
  env ATTN_ISA=avx3 "$attn" doctor --seconds 0
[[ "$(ATTN_ISA=AVX2 "$attn" doctor --seconds 0 2>&1 | wc -l)" == 1 ]] || fail "ATTN_ISA=AVX2: not one line"
# ATTN_FP32_GEMM (src/kernels/blas.h): named in `doctor`; a bad value is one line before any work.
expect 0 "fp32        OpenBLAS for every product (ATTN_FP32_GEMM=openblas)" -- env ATTN_FP32_GEMM=openblas "$attn" doctor --seconds 0
expect 1 "attn: error: ATTN_FP32_GEMM=fast: unknown (valid: auto, openblas, onednn)" -- \
  env ATTN_FP32_GEMM=fast "$attn" train --task copy --steps 1 --out "$work/fp32-gemm-refused"
[[ ! -e "$work/fp32-gemm-refused" ]] || fail "ATTN_FP32_GEMM=fast: the run folder was made"

# Bad options: usage errors.
expect 2 "--seconds" -- "$attn" doctor --seconds -1
expect 2 "--seconds" -- "$attn" doctor --seconds abc
expect 2 "--threads" -- "$attn" doctor --threads 0

finish doctor
