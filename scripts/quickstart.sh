#!/usr/bin/env bash
# Set up resource-tracker on a fresh Debian 12 machine and run a real workload
# as a tracked job: its summary prints when it ends (samples too when stderr
# is not a terminal: `bash scripts/quickstart.sh 2>log`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
CTL=./build/ctl/resource-trackerctl
# Without a system daemon, `run` starts a private one that exits when idle.
# The workload: two processes hashing for 3 s, one writing 64 MiB to disk.
$CTL run --job-name quickstart -- sh -c '
  timeout 3 sha256sum /dev/zero & timeout 3 sha256sum /dev/zero &
  dd if=/dev/zero of="${TMPDIR:-/tmp}/rt-quickstart.$$" bs=1M count=64 conv=fsync status=none
  rm -f "${TMPDIR:-/tmp}/rt-quickstart.$$"; wait'
echo
$CTL status quickstart
