#!/usr/bin/env bash
# Benchmark (prints figures; not a pass/fail test): CPU time per host sample
# next to the raw cost of reading the same /proc and /sys sources, over
# COUNT samples (default 5000) taken back to back, in a release build.
#   tests/bench/bench_host_sample.sh [--proc-root DIR --sys-root DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BENCH_BUILD_DIR:-build-bench}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DRT_SANITIZE=OFF >/dev/null
cmake --build "$build" --target rt_bench_host -j"$(nproc)" >/dev/null
"$build/tests/tools/rt_bench_host" --count "${COUNT:-5000}" "$@"
