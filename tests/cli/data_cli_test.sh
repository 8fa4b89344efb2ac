#!/usr/bin/env bash
# attn data get / list against a local HTTP server (fixtures/data_server.py, started here on
# 127.0.0.1 for at most a minute) that serves ../shared/data as a mirror, through the real
# libcurl path: a full download, a redirect, a corrupted byte, a wrong length, an interrupted
# download resumed, a stalled server, a full disk, two gets at once, --mirror DIR, and where
# commands look for data without --data. Then the sets whose upstream is one archive
# (tatoeba-fra-eng's zip, cmudict's npm .tgz) from a second server holding archives made here
# from ../shared/data (fixtures/make_upstream_archives.py): unpacked, converted and installed,
# each checked against the test's pin of its archive (ATTN_TEST_ARCHIVE_SHA256) and every
# installed file against attn's own pins; a corrupted archive, a damaged one, an index.js that
# does not parse. Usage: data_cli_test.sh path/to/attn
set -uo pipefail
attn="$(realpath "$1")"
data="$(realpath -m "${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}")"
source "$(dirname "$0")/lib.sh"

# Without data: names, the refusals that need no transfer.
expect 2 "unknown data set 'nosuch' (known: sst2, multi30k, tatoeba-fra-eng, cmudict, glove-6b" -- \
  "$attn" data get nosuch --to "$work/none"
expect 2 "needs a data set name" -- "$attn" data get --to "$work/none"
expect 1 "no SHA-256 is pinned" -- "$attn" data get fasttext-wiki-news-300d --to "$work/none"
expect 2 "ATTN_TEST_ARCHIVE_SHA256: expected NAME=SHA256 (64 lower-case hex digits), got 'cmudict=abc'" -- \
  env ATTN_TEST_ARCHIVE_SHA256=cmudict=abc "$attn" data get cmudict --to "$work/none"
expect 0 "sst2" -- "$attn" data list --to "$work/none"
[[ ! -e "$work/none/sst2" ]] || fail "a refused get installed something"

have_data sst2/sentiment-train.gz sst2/sentiment-dev sst2/sentiment-test sst2/LICENSE.upstream \
  sst2/README.upstream.md || finish "data CLI"

/usr/bin/python3 "$(dirname "$0")/fixtures/data_server.py" "$data" "$work/port" "$work/requests.log" 60 30 &
server=$!
servers=($server)
trap 'kill "${servers[@]}" 2>/dev/null; rm -rf "$work"' EXIT
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

# The archive sets. A mirror laid out like ../shared/data still gives the files (HTTP: the
# HEAD for the archive finds none).
expect 0 "cmudict: installed in $work/cmu-files/cmudict" -- "$attn" data get cmudict --to "$work/cmu-files" --mirror "$url/plain"
grep -q "^/plain/cmudict/cmudict.dict.gz" "$work/requests.log" || fail "cmudict's files were not fetched"
if have_data tatoeba-fra-eng/fra.txt.gz tatoeba-fra-eng/_about.txt cmudict/cmudict.dict.gz cmudict/LICENSE.npm-package; then
  up="$work/upstream"
  /usr/bin/python3 "$(dirname "$0")/fixtures/make_upstream_archives.py" "$data" "$up" || fail "cannot make the archives"
  /usr/bin/python3 "$(dirname "$0")/fixtures/data_server.py" "$up" "$work/port2" "$work/requests2.log" 60 30 &
  servers+=($!)
  for _ in $(seq 50); do [[ -s "$work/port2" ]] && break; sleep 0.1; done
  url2="http://127.0.0.1:$(cat "$work/port2")"
  zip_pin="tatoeba-fra-eng=$(sha256sum "$up/tatoeba-fra-eng/fra-eng.zip" | cut -c1-64)"
  tgz_pin="cmudict=$(sha256sum "$up/cmudict/cmu-pronouncing-dictionary-3.0.0.tgz" | cut -c1-64)"
  # Unpacked over HTTP, installed, verifying; the same content as ../shared/data's.
  expect 0 "tatoeba-fra-eng: installed in $work/arch/tatoeba-fra-eng" -- \
    env ATTN_TEST_ARCHIVE_SHA256="$zip_pin" "$attn" data get tatoeba-fra-eng --to "$work/arch" --mirror "$url2/plain"
  grep -q "^/plain/tatoeba-fra-eng/fra-eng.zip" "$work/requests2.log" || fail "the zip was not downloaded"
  cmp -s <(zcat "$work/arch/tatoeba-fra-eng/fra.txt.gz") <(zcat "$data/tatoeba-fra-eng/fra.txt.gz") || fail "fra.txt differs"
  grep -q "a test archive: not the upstream's" "$work/arch/tatoeba-fra-eng/SOURCE.md" || fail "SOURCE.md hides the test pin"
  expect 0 "cmudict: installed" -- \
    env ATTN_TEST_ARCHIVE_SHA256="$tgz_pin" "$attn" data get cmudict --to "$work/arch" --mirror "$url2/redirect"
  cmp -s <(zcat "$work/arch/cmudict/cmudict.dict.gz") <(zcat "$data/cmudict/cmudict.dict.gz") || fail "cmudict.dict differs"
  expect 0 "verifies" -- "$attn" data list --to "$work/arch"
  [[ -z "$(ls -A "$work/arch/.partial" 2>/dev/null)" ]] || fail "left in .partial: $(ls -A "$work/arch/.partial")"
  # Without the test's pin the upstream's applies: a mirror's own archive is refused.
  expect 1 "cmudict/cmu-pronouncing-dictionary-3.0.0.tgz from $url2/plain/cmudict/cmu-pronouncing-dictionary-3.0.0.tgz: wrong length: expected 950120 bytes" -- \
    "$attn" data get cmudict --to "$work/no-pin" --mirror "$url2/plain"
  [[ ! -e "$work/no-pin/cmudict" ]] || fail "an archive not matching the upstream's pin was installed"
  # A corrupted byte in the download: refused by the archive's pin, nothing installed.
  expect 1 "fra-eng.zip: sha256 mismatch: expected ${zip_pin#*=}" -- \
    env ATTN_TEST_ARCHIVE_SHA256="$zip_pin" "$attn" data get tatoeba-fra-eng --to "$work/arch-bad" --mirror "$url2/corrupt"
  # A damaged archive given its own pin (--mirror DIR): libarchive's error, nothing installed.
  mkdir -p "$work/damaged/cmudict" && cp "$up/cmudict/cmu-pronouncing-dictionary-3.0.0.tgz" "$work/damaged/cmudict/"
  tgz="$work/damaged/cmudict/cmu-pronouncing-dictionary-3.0.0.tgz"
  printf '\x00\x00\x00\x00' | dd of="$tgz" bs=1 seek=$(($(stat -c %s "$tgz") / 2)) conv=notrunc status=none
  expect 1 "cmu-pronouncing-dictionary-3.0.0.tgz: corrupt gzip data (" -- \
    env ATTN_TEST_ARCHIVE_SHA256="cmudict=$(sha256sum "$tgz" | cut -c1-64)" "$attn" data get cmudict --to "$work/arch-bad" --mirror "$work/damaged"
  # An index.js that does not parse: one error line naming the byte, nothing installed.
  out="$(env ATTN_TEST_ARCHIVE_SHA256="cmudict=$(sha256sum "$up/bad-js/cmudict/cmu-pronouncing-dictionary-3.0.0.tgz" | cut -c1-64)" \
    "$attn" data get cmudict --to "$work/arch-bad" --mirror "$up/bad-js" 2>&1)"
  rc=$?
  error_line="$(grep "^attn: error:" <<<"$out")"
  [[ $rc == 1 && "$error_line" == "attn: error: index.js of cmu-pronouncing-dictionary: the object does not parse as JSON at byte "* ]] ||
    fail "an index.js that does not parse: exit $rc, error line '$error_line'; output: $out"
  [[ ! -e "$work/arch-bad/cmudict" && ! -e "$work/arch-bad/tatoeba-fra-eng" ]] || fail "a bad archive installed something"
fi

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
