#!/usr/bin/env bash
# Per-job AMD attribution cost (readlink per fd, fdinfo read per DRM fd) for a
# process with 10, 1000 and 10000 ordinary fds. Prints figures; not a test.
# usage: tests/bench/gpu_fdinfo.sh [BUILD_DIR]   (a release build gives real numbers)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
for n in 10 1000 10000; do
  "$build/tests/tools/gpu_fdinfo_bench" "$root/tests/fixtures/gpu/amd/sys" "$n" 200
done
