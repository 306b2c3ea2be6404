#!/bin/sh
# ctest's fuzz.TARGET: run a libFuzzer target for SECONDS from its corpus.
#   run_fuzzer.sh FUZZER CORPUS SECONDS
# New inputs go to fuzz-work/TARGET in the build tree (the source corpus is
# read, not written). A crash fails the test and leaves its input in
# fuzz-artifacts/TARGET/: once fixed, add it to tests/fuzz/corpus/TARGET/,
# where fuzz.replay.TARGET replays it in every build.
set -eu
bin=$1 corpus=$2 secs=$3
name=$(basename "$bin")
mkdir -p "fuzz-work/$name" "fuzz-artifacts/$name"
exec "$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len=65536 \
     -artifact_prefix="fuzz-artifacts/$name/" -print_final_stats=1 "fuzz-work/$name" "$corpus"
