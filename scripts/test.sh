#!/usr/bin/env bash
# Set up (dependencies, an ASan+UBSan build, a Release build and the fuzzers)
# and run the whole test suite in both builds, then each fuzzer for
# RT_FUZZ_SECONDS (60). Arguments go to ctest (e.g. -R config); with
# arguments the fuzzers are not run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
rc=0
for dir in build-asan build-rel; do
  echo "test: ctest in ./$dir"
  (cd "$dir" && ctest --output-on-failure -j"$(nproc)" "$@") || rc=1
done
if [ $# -eq 0 ]; then
  echo "test: the fuzzers in ./build-fuzz"
  (cd build-fuzz && ctest --output-on-failure -j"$(nproc)" -L fuzz) || rc=1
fi
exit $rc
