#!/usr/bin/env bash
# Slurm for tests/integration/slurmlib.py: a single-node slurmctld + slurmd on
# loopback with munge, started and stopped by the tests themselves (the
# packages' own services are not used; nothing listens until a test runs).
set -euo pipefail
source "$(dirname "$0")/../lib/apt.sh"
rt_apt_install setup.d/slurm slurmctld slurmd slurm-client munge
