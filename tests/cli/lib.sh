# Shared by the tests/cli/*_test.sh scripts (sourced, after `set -uo pipefail` and setting
# $data): a scratch folder $work removed on exit, failure counting and the expect, have_data
# and finish helpers.
work="$(mktemp -d)"
# attn data get's folder, where commands look when --data is not given: empty, so that no
# test reads a developer's installed data by accident.
export XDG_DATA_HOME="$work/xdg-data"
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# The exit code of a script that skipped checks for want of data: tests/CMakeLists.txt
# registers it as ctest's SKIP_RETURN_CODE, so ctest reports the script as Skipped.
readonly skip_exit_code=77
skipped=()

# if have_data FILE...; then (checks that read $data/FILE...) fi
# False when a file is missing: the part is recorded as skipped, or, with ATTN_REQUIRE_DATA=1
# (.ci/run sets it when the data is there), counted as a failure.
have_data() {
  local file
  for file in "$@"; do
    [[ -f "$data/$file" ]] && continue
    if [[ "${ATTN_REQUIRE_DATA:-}" == 1 ]]; then
      fail "ATTN_REQUIRE_DATA is set but $data/$file is missing"
    else
      echo "SKIP: no $data/$file" >&2
      skipped+=("$file")
    fi
    return 1
  done
}

# expect CODE "message fragment" -- command...
expect() {
  local code="$1" fragment="$2"; shift 3
  local out rc
  out="$("$@" 2>&1)"; rc=$?
  [[ $rc == "$code" ]] || fail "'$*' exited $rc, expected $code; output: $out"
  [[ -z "$fragment" || "$out" == *"$fragment"* ]] || fail "'$*' output lacks '$fragment': $out"
}

# finish "NAME": the summary line; exit status 1 when any check failed, else skip_exit_code
# when a part was skipped for want of data, else 0.
finish() {
  if ((failures)); then echo "$failures $1 check(s) failed" >&2; exit 1; fi
  if ((${#skipped[@]})); then
    echo "$1: skipped what needs ${skipped[*]} (missing); any other checks passed"
    exit "$skip_exit_code"
  fi
  echo "all $1 checks passed"
}
