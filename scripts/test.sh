#!/usr/bin/env bash
# Set up (dependencies and an ASan+UBSan build) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
cd build-asan
ctest --output-on-failure -j"$(nproc)" "$@"
