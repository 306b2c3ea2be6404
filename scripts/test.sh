#!/usr/bin/env bash
# Set up (dependencies, an ASan+UBSan build and a Release build) and run the
# whole test suite in both. Arguments go to ctest (e.g. -R config).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
rc=0
for dir in build-asan build-rel; do
  echo "test: ctest in ./$dir"
  (cd "$dir" && ctest --output-on-failure -j"$(nproc)" "$@") || rc=1
done
exit $rc
