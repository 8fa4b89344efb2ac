# Shared by the tests/cli/*_test.sh scripts (sourced, after `set -uo pipefail`): a scratch
# folder $work removed on exit, failure counting and the expect/finish helpers.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# expect CODE "message fragment" -- command...
expect() {
  local code="$1" fragment="$2"; shift 3
  local out rc
  out="$("$@" 2>&1)"; rc=$?
  [[ $rc == "$code" ]] || fail "'$*' exited $rc, expected $code; output: $out"
  [[ -z "$fragment" || "$out" == *"$fragment"* ]] || fail "'$*' output lacks '$fragment': $out"
}

# finish "NAME": the summary line, and exit status 1 when any check failed.
finish() {
  if ((failures)); then echo "$failures $1 check(s) failed" >&2; exit 1; fi
  echo "all $1 checks passed"
}
