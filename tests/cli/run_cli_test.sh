#!/usr/bin/env bash
# The run loop from the command line: SIGTERM and SIGHUP save the run like Ctrl-C (exit
# 128 + the signal), --save-every writes last.safetensors while training (a kill -9 loses
# at most that much), --max-minutes stops and saves, and --resume continues from each.
# Usage: run_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
source "$(dirname "$0")/lib.sh"

tiny=(--task copy --hidden 16 --emb 8 --min-len 3 --max-len 6 --batch 8 --log-every 5 --eval-every 50 --eval-samples 16 --threads 1)

# wait_for FILE: up to 60 s for FILE to exist and be non-empty.
wait_for() {
  for _ in $(seq 600); do [[ -s "$1" ]] && return 0; sleep 0.1; done
  return 1
}

# runs_in LOG: how many sessions LOG records (one {"run": ...} line each; 0 without LOG).
runs_in() { if [[ -f "$1" ]]; then grep -c '"run"' "$1" || true; else echo 0; fi; }

# signal_run SIGNAL CODE DIR [extra flags]: starts a long run, sends SIGNAL once this session
# has written its record to log.jsonl (after its signal handlers are installed: a resumed
# run's folder already holds a log, and on a loaded machine a signal sent before that would
# find the default action), and expects exit CODE, the signal named, and a last.safetensors
# to resume from.
signal_run() {
  local signal="$1" code="$2" dir="$3"; shift 3
  local before; before=$(runs_in "$dir/log.jsonl")
  "$attn" train "${tiny[@]}" --steps 1000000 --out "$dir" "$@" >"$work/out.txt" 2>&1 &
  local pid=$!
  for _ in $(seq 600); do (($(runs_in "$dir/log.jsonl") > before)) && break; sleep 0.1; done
  sleep 0.5
  kill -s "$signal" "$pid"
  wait "$pid"; local rc=$?
  [[ $rc == "$code" ]] || fail "$signal: exited $rc, expected $code: $(cat "$work/out.txt")"
  grep -q "interrupted ($signal) at step" "$work/out.txt" || fail "$signal: no interruption message: $(cat "$work/out.txt")"
  [[ -s "$dir/last.safetensors" ]] || fail "$signal: no last.safetensors"
}

signal_run SIGTERM 143 "$work/term"
signal_run SIGHUP 129 "$work/term" --resume
signal_run SIGINT 130 "$work/term" --resume
# Every line of the log, across the three sessions, is one JSON object.
python3 -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
for line in lines: json.loads(line)
runs = [json.loads(l) for l in lines if "run" in json.loads(l)]
assert len(runs) == 3, len(runs)
assert "command_line" in runs[0]["run"] and "train" in runs[0]["run"]["command_line"], runs[0]
' "$work/term/log.jsonl" || fail "log.jsonl of the signalled runs is not one JSON object per line with a provenance record per session"

# --save-every: last.safetensors appears while the run goes on; after kill -9 it resumes.
"$attn" train "${tiny[@]}" --steps 1000000 --save-every 0.002 --out "$work/periodic" >/dev/null 2>&1 &
pid=$!
wait_for "$work/periodic/last.safetensors" || fail "--save-every wrote no last.safetensors"
kill -s KILL "$pid"; wait "$pid" 2>/dev/null
expect 0 "" -- "$attn" eval --model "$work/periodic/last.safetensors" --eval-lengths 3 --samples 4 --json
expect 2 "--save-every must be >= 0 minutes" -- "$attn" train "${tiny[@]}" --save-every -1 --out "$work/bad1"

# --max-minutes stops the run early with exit 0, and --resume goes on from there.
expect 0 "trained" -- "$attn" train "${tiny[@]}" --steps 1000000 --max-minutes 0.002 --out "$work/timed"
[[ -s "$work/timed/last.safetensors" ]] || fail "--max-minutes did not save last.safetensors"
expect 0 "trained" -- "$attn" train "${tiny[@]}" --steps 1000000 --max-minutes 0.002 --out "$work/timed" --resume
[[ $(grep -c '"run"' "$work/timed/log.jsonl") == 2 ]] || fail "the resumed --max-minutes run did not append to log.jsonl"

# --resume refuses changed options, naming the option and both values; more --steps and
# another --log-every are fine.
base=(--task copy --hidden 16 --emb 8 --min-len 3 --max-len 6 --eval-every 50 --eval-samples 16 --threads 1)
expect 0 "trained 10 steps" -- "$attn" train "${base[@]}" --batch 8 --steps 10 --out "$work/opts"
expect 1 "--resume: --lr 0.002 differs from the run in $work/opts (--lr 0.001)" -- \
  "$attn" train "${base[@]}" --batch 8 --steps 20 --lr 0.002 --out "$work/opts" --resume
expect 1 "--resume: --batch 4 differs from the run in $work/opts (--batch 8)" -- \
  "$attn" train "${base[@]}" --batch 4 --steps 20 --out "$work/opts" --resume
expect 1 "--resume: --seed 7 differs from the run in $work/opts (--seed 1)" -- \
  "$attn" train "${base[@]}" --batch 8 --steps 20 --seed 7 --out "$work/opts" --resume
expect 1 "--resume: --max-len 7 differs from the run in $work/opts (--max-len 6)" -- \
  "$attn" train --task copy --hidden 16 --emb 8 --min-len 3 --max-len 7 --eval-every 50 --eval-samples 16 --threads 1 \
  --batch 8 --steps 20 --out "$work/opts" --resume
expect 0 "trained 20 steps" -- "$attn" train "${base[@]}" --batch 8 --steps 20 --log-every 2 --out "$work/opts" --resume

# A folder that holds another run is refused unless --resume or --overwrite.
expect 1 "holds another run (last.safetensors); give --resume to continue it, --overwrite to replace it" -- \
  "$attn" train "${tiny[@]}" --steps 4 --out "$work/opts"
touch "$work/opts/spm.model"
expect 0 "trained 4 steps" -- "$attn" train "${tiny[@]}" --steps 4 --overwrite --out "$work/opts"
[[ ! -e "$work/opts/spm.model" ]] || fail "--overwrite left the old run's spm.model"
[[ $(grep -c '"run"' "$work/opts/log.jsonl") == 1 ]] || fail "--overwrite kept the old run's log lines"
# Two runs on one folder at once: the second is refused while the first holds its lock.
"$attn" train "${tiny[@]}" --steps 1000000 --out "$work/busy" >/dev/null 2>&1 &
pid=$!
wait_for "$work/busy/log.jsonl"
expect 1 "another attn run is using this folder" -- "$attn" train "${tiny[@]}" --steps 4 --overwrite --out "$work/busy"
kill -s INT "$pid"; wait "$pid"

finish "run"
