#!/usr/bin/env bash
# attn data get / list against a local HTTP server (fixtures/data_server.py, started here on
# 127.0.0.1 for at most a minute) that serves ../shared/data as a mirror, through the real
# libcurl path: a full download, a redirect, a corrupted byte, a wrong length, an interrupted
# download resumed, a stalled server, a full disk, two gets at once, --mirror DIR, and where
# commands look for data without --data. Usage: data_cli_test.sh path/to/attn
set -uo pipefail
attn="$(realpath "$1")"
data="$(realpath -m "${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}")"
source "$(dirname "$0")/lib.sh"

# Without data: names, the refusals that need no transfer.
expect 2 "unknown data set 'nosuch' (known: sst2, multi30k, tatoeba-fra-eng, cmudict, glove-6b" -- \
  "$attn" data get nosuch --to "$work/none"
expect 2 "needs a data set name" -- "$attn" data get --to "$work/none"
expect 1 "no SHA-256 is pinned" -- "$attn" data get fasttext-wiki-news-300d --to "$work/none"
expect 1 "attn does not convert" -- "$attn" data get cmudict --to "$work/none"
expect 0 "sst2" -- "$attn" data list --to "$work/none"
[[ ! -e "$work/none/sst2" ]] || fail "a refused get installed something"

have_data sst2/sentiment-train.gz sst2/sentiment-dev sst2/sentiment-test sst2/LICENSE.upstream \
  sst2/README.upstream.md || finish "data CLI"

/usr/bin/python3 "$(dirname "$0")/fixtures/data_server.py" "$data" "$work/port" "$work/requests.log" 60 30 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do [[ -s "$work/port" ]] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$work/port")"

# A full download, then list: every file, the source record, all verifying.
expect 0 "sst2: installed in $work/full/sst2" -- "$attn" data get sst2 --to "$work/full" --mirror "$url/plain"
for f in sentiment-train.gz sentiment-dev sentiment-test SOURCE.md; do [[ -s "$work/full/sst2/$f" ]] || fail "no $f installed"; done
cmp -s <(zcat "$work/full/sst2/sentiment-train.gz") <(zcat "$data/sst2/sentiment-train.gz") || fail "installed train differs"
expect 0 "verifies" -- "$attn" data list --to "$work/full"
expect 0 "already installed" -- "$attn" data get sst2 --to "$work/full" --mirror "$url/plain"
[[ ! -e "$work/full/.partial/sst2" ]] || fail "the staging folder is left behind"

# A redirect is followed.
expect 0 "installed" -- "$attn" data get sst2 --to "$work/redirect" --mirror "$url/redirect"
grep -q "^/plain/sst2/sentiment-dev" "$work/requests.log" || fail "the redirect was not followed"

# A corrupted byte and a wrong length are refused, and nothing is installed.
expect 1 "sha256 mismatch: expected 760536b1" -- "$attn" data get sst2 --to "$work/corrupt" --mirror "$url/corrupt"
[[ ! -e "$work/corrupt/sst2" ]] || fail "a corrupted download was installed"
expect 1 "wrong length: expected 1068 bytes of content, got 1069" -- \
  "$attn" data get sst2 --to "$work/long" --mirror "$url/long"
[[ ! -e "$work/long/sst2" ]] || fail "a download of the wrong length was installed"

# An interrupted download is kept and the next run resumes it with a range request.
expect 1 "LICENSE.upstream" -- "$attn" data get sst2 --to "$work/resume" --mirror "$url/cut"
[[ ! -e "$work/resume/sst2" ]] || fail "an interrupted download was installed"
part="$work/resume/.partial/sst2/LICENSE.upstream.part"
[[ "$(stat -c %s "$part" 2>/dev/null)" == 534 ]] || fail "the interrupted part does not hold the 534 bytes sent"
expect 0 "resumed after 534 bytes" -- "$attn" data get sst2 --to "$work/resume" --mirror "$url/plain"
grep -q "^/plain/sst2/LICENSE.upstream bytes=534-" "$work/requests.log" || fail "no range request resumed the part"
cmp -s "$work/resume/sst2/LICENSE.upstream" "$data/sst2/LICENSE.upstream" || fail "the resumed file differs"

# A server that stops sending: a timeout naming the stall, within seconds.
start=$SECONDS
expect 1 "the server stalled (no data for 1 s)" -- \
  "$attn" data get sst2 --to "$work/stall" --mirror "$url/stall" --stall-timeout 1
((SECONDS - start < 15)) || fail "the stall took $((SECONDS - start)) s to detect"
[[ ! -e "$work/stall/sst2" ]] || fail "a stalled download was installed"

# A full disk (the part is /dev/full): the write error, nothing installed.
mkdir -p "$work/full-disk/.partial/sst2" && ln -s /dev/full "$work/full-disk/.partial/sst2/LICENSE.upstream.part"
expect 1 "No space left on device" -- "$attn" data get sst2 --to "$work/full-disk" --mirror "$url/plain"
[[ ! -e "$work/full-disk/sst2" ]] || fail "a download onto a full disk was installed"

# Two gets into one folder at once: the second is refused while the first holds the lock.
stalls=$(grep -c "^/stall/" "$work/requests.log")
"$attn" data get sst2 --to "$work/two" --mirror "$url/stall" --stall-timeout 20 >/dev/null 2>&1 &
first=$!
for _ in $(seq 100); do (($(grep -c "^/stall/" "$work/requests.log") > stalls)) && break; sleep 0.1; done
expect 1 "another attn data get is installing into $work/two" -- \
  "$attn" data get sst2 --to "$work/two" --mirror "$url/plain"
kill "$first" 2>/dev/null; wait "$first" 2>/dev/null
[[ ! -e "$work/two/sst2" ]] || fail "the interrupted first get installed something"

# --mirror DIR: a folder laid out like ../shared/data.
expect 0 "installed" -- "$attn" data get sst2 --to "$work/dir" --mirror "$data"
expect 0 "verifies" -- "$attn" data list --to "$work/dir"

# A file the source has plain (as upstream has SST-2's training file) is installed gzip-compressed,
# its content checked against the same pin.
mkdir -p "$work/plain-mirror/sst2"
cp "$data"/sst2/{LICENSE.upstream,README.upstream.md,sentiment-dev,sentiment-test} "$work/plain-mirror/sst2/"
zcat "$data/sst2/sentiment-train.gz" >"$work/plain-mirror/sst2/sentiment-train.gz"
expect 0 "installed" -- "$attn" data get sst2 --to "$work/gz" --mirror "$work/plain-mirror"
gzip -t "$work/gz/sst2/sentiment-train.gz" 2>/dev/null || fail "a plain download was not installed gzip-compressed"
cmp -s <(zcat "$work/gz/sst2/sentiment-train.gz") "$work/plain-mirror/sst2/sentiment-train.gz" || fail "its content changed"

# Without --data, commands look in the data home, then ../shared/data, and say which.
tiny=(train --task sst2 --model bilstm --emb 8 --hidden 4 --steps 1 --train-limit 40 --dev-limit 10 --threads 1)
expect 0 "installed in $work/home/attn/sst2" -- env XDG_DATA_HOME="$work/home" "$attn" data get sst2 --mirror "$data"
expect 0 "data: using $work/home/attn" -- env XDG_DATA_HOME="$work/home" "$attn" "${tiny[@]}" --out "$work/t1"
mkdir -p "$work/tree/shared" "$work/tree/clone/sub" && ln -s "$data" "$work/tree/shared/data"
expect 0 "data: using ../shared/data" -- env -C "$work/tree/clone" "$attn" "${tiny[@]}" --out "$work/t2"
expect 2 "--task sst2 needs --data DIR (the folder holding sst2/): no sst2/ in $XDG_DATA_HOME/attn, ../shared/data" -- \
  env -C "$work/tree/clone/sub" "$attn" "${tiny[@]}" --out "$work/t3"
finish "data CLI"
