#!/usr/bin/env bash
# Run every benchmark in tests/bench/ and print their figures (not a
# pass/fail test; not registered in ctest). A Release tree is built in
# build-release (or $BENCH_BUILD_DIR). --quick shortens every window.
#   tests/bench/run_all.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")"
for b in bench_tick_cpu.py bench_pss.py bench_latency.py bench_run_wall.py bench_rss.py bench_store.py bench_report.py bench_soak.py \
         bench_complete.py bench_live.py bench_stream_load.py bench_cgroup.py bench_adopt.py bench_gpu_tick.py; do
    echo
    /usr/bin/python3 -B "./$b" "$@"
done
