#!/usr/bin/env bash
# Issue 34, sizes and checks before work: products of user-given sizes are checked in 64 bits
# and against memory before anything is allocated or written (defect 1), --vocab-size is
# bounded at 2^24 (defect 6), output folders, evaluation memory and --resume are checked before
# any training (defect 14), and the messages of defect 13 name what is wrong.
# Usage: sizes_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
source "$(dirname "$0")/lib.sh"
export ATTN_MEMORY_LIMIT=8G  # the same refusals on every machine

# gone PATH WHAT: the refused command made nothing at PATH.
gone() { [[ ! -e "$1" && ! -L "$1" ]] || fail "$2 made $1"; }

# Defect 1: bucket x batch wrapped in int (SIGSEGV; "batch size -2147483584").
expect 2 "--bucket 1048577 x --batch 4096: more than 2147483647 sources in one pool" -- \
  timeout 20 "$attn" train --task copy --batch 4096 --bucket 1048577 --steps 1 --out "$work/b1"
gone "$work/b1" "train --bucket 1048577"
expect 2 "--bucket 33554433 x --batch 64" -- timeout 20 "$attn" train --task copy --batch 64 --bucket 33554433 --steps 1 --out "$work/b2"
expect 2 "--bucket 1048577 x --batch 4096" -- timeout 20 "$attn" sweep --batch 4096 --bucket 1048577 --steps 1 --out "$work/s1"
gone "$work/s1" "sweep --bucket 1048577"
expect 2 "--eval-samples 2000000000" -- timeout 20 "$attn" train --task copy --eval-samples 2000000000 --steps 1 --out "$work/b3"
gone "$work/b3" "train --eval-samples 2000000000"
# The same class in the text tasks: 2 x --max-len + 1 wrapped, --max-len + 2 wrapped.
expect 2 "--max-len must be in [2, 1048576], got 2000000000" -- \
  timeout 20 "$attn" train --task translate --data "$data" --max-len 2000000000 --out "$work/t1"
gone "$work/t1" "train --task translate --max-len 2000000000"
expect 2 "--max-len must be in [2, 1048574], got 2147483647" -- \
  timeout 20 "$attn" train --task charlm --data "$data" --max-len 2147483647 --out "$work/c1"

# Defect 6: SentencePiece's vocab_size x 1.1 wraps from 1,952,257,862 and trains for ever.
printf 'ein Hund läuft\nzwei Katzen schlafen\n' > "$work/text.txt"
expect 2 "--vocab-size must be in [5, 16777216], got 2000000000" -- \
  timeout 20 "$attn" tokenize train --input "$work/text.txt" --vocab-size 2000000000 --out "$work/spm"
expect 2 "--vocab-size must be in [16, 16777216], got 2000000000" -- \
  timeout 20 "$attn" train --task translate --data "$data" --vocab-size 2000000000 --out "$work/t2"
gone "$work/t2" "train --task translate --vocab-size 2000000000"
[[ -z "$(ls -A "$work" | grep attn-spm)" ]] || fail "a refused tokenizer training left $(ls -A "$work")"

# Defect 14: a --out that cannot be a folder fails before the work; so does --eval-lengths
# beyond memory in sweep, before two models are trained; --resume into nothing makes nothing.
echo mine > "$work/notes.txt"
expect 1 "--out $work/notes.txt: a file, not a folder" -- \
  "$attn" explain --model "$work/no-model.safetensors" --data "$data" --out "$work/notes.txt"
expect 1 "--out $work/notes.txt: a file, not a folder" -- "$attn" sweep --steps 1 --out "$work/notes.txt"
expect 1 "--out $work/notes.txt: a file, not a folder" -- "$attn" train --task copy --steps 1 --out "$work/notes.txt"
[[ "$(cat "$work/notes.txt")" == mine ]] || fail "a refused --out changed the user's file"
expect 2 "--eval-lengths 1000000:" -- timeout 20 "$attn" sweep --steps 1 --eval-lengths 1000000 --out "$work/s2"
gone "$work/s2" "sweep --eval-lengths 1000000"
expect 1 "nothing to resume" -- "$attn" train --task copy --steps 2 --resume --out "$work/missing"
gone "$work/missing" "train --resume"
if have_data tatoeba-fra-eng/fra.txt.gz; then
  expect 1 "nothing to resume" -- "$attn" train --task charlm --data "$data" --train-limit 100 --steps 2 --resume \
    --out "$work/missing-lm"
  gone "$work/missing-lm" "train --task charlm --resume"
fi

# Defect 13: messages that name what is wrong.
expect 1 "--out /dev/null: a character device, not a folder" -- \
  "$attn" export --to torch --model "$work/no-model.safetensors" --out /dev/null
ln -s "$work/nowhere" "$work/dangling"
expect 1 "--out $work/dangling: a symbolic link to '$work/nowhere', which does not exist" -- \
  "$attn" export --to torch --model "$work/no-model.safetensors" --out "$work/dangling"
expect 1 "a symbolic link to '$work/nowhere', which does not exist" -- \
  "$attn" train --task copy --steps 1 --out "$work/dangling"
gone "$work/nowhere" "train --out DANGLING-LINK"
mkfifo "$work/fifo"
expect 1 "$work/fifo: not a regular file (a FIFO)" -- timeout 20 "$attn" tokenize encode --model "$work/fifo" < /dev/null
expect 1 "/dev/zero: not a regular file (a character device)" -- timeout 20 "$attn" tokenize encode --model /dev/zero < /dev/null
expect 1 "no such file" -- "$attn" tokenize encode --model "$work/absent.model" < /dev/null
{ head -c 2000000 /dev/zero | tr '\0' 'a'; echo; } > "$work/long.txt"
expect 1 "no training line to learn from: 1 line is longer than 4192 bytes" -- \
  "$attn" tokenize train --input "$work/long.txt" --vocab-size 20 --out "$work/long"
out="$("$attn" translate --model "$work/no-model.safetensors" --max-len 2000000000 < /dev/null 2>&1)"; rc=$?
[[ $rc == 2 && "$out" == *"--max-len must be in [0, 1048576]"* && "$out" != *"--eval-lengths"* ]] ||
  fail "translate --max-len 2000000000: exit $rc: $out"

# Defect 5: under an address-space limit OpenBLAS looped for ever in blas_memory_alloc when a
# thread's buffer did not fit (--threads 8 under ulimit -v 1000000). Now one line, exit 1,
# before the work; and --threads is at most 4 per CPU.
tiny=(--task copy --hidden 16 --emb 8 --min-len 3 --max-len 6 --batch 8 --steps 2 --eval-every 2 --eval-samples 8)
# AddressSanitizer reserves terabytes of shadow address space at start, so a binary built with
# it cannot run under any ulimit -v: the address-space checks run on the other builds (the
# native one in scripts/test.sh).
# ldd's output read whole first: `ldd | grep -q` under pipefail fails when grep exits at the
# first match and ldd dies of SIGPIPE, which ran the checks on an ASan binary under load.
if [[ "$(ldd "$attn")" == *libasan* ]]; then
  echo "sizes_cli_test: the ulimit -v checks need a binary without AddressSanitizer; not run on $attn"
else
  out="$( (ulimit -v 600000; timeout -s KILL 60 "$attn" train "${tiny[@]}" --threads 4 --out "$work/u1") 2>&1)"; rc=$?
  [[ $rc == 1 && "$out" == *"4 threads need about 832 MiB of address space"*"address-space limit (ulimit -v)"* ]] ||
    fail "--threads 4 under ulimit -v 600000: exit $rc: $out"
  gone "$work/u1" "train --threads 4 under ulimit -v 600000"
  out="$( (ulimit -v 1000000; timeout -s KILL 60 "$attn" train "${tiny[@]}" --threads 1 --out "$work/u2") 2>&1)"; rc=$?
  [[ $rc == 0 ]] || fail "--threads 1 under ulimit -v 1000000: exit $rc: $out"
fi
cpus=$(getconf _NPROCESSORS_ONLN)
expect 2 "more than 4 threads per CPU: this machine has $cpus CPUs; give at most $((4 * cpus))" -- \
  "$attn" train "${tiny[@]}" --threads $((4 * cpus + 1)) --out "$work/u3"
expect 2 "ATTN_NUM_THREADS $((4 * cpus + 1)): more than 4 threads per CPU" -- \
  env ATTN_NUM_THREADS=$((4 * cpus + 1)) "$attn" train "${tiny[@]}" --out "$work/u3"

finish "sizes CLI"
