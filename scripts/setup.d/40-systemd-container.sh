#!/usr/bin/env bash
# The systemd container test (tests/systemd/) boots a debootstrapped Debian
# 12 with systemd-nspawn, builds the package in another from a clean clone
# (git) and installs it; it needs debootstrap, systemd-nspawn and, for the
# package checks, dpkg-deb. The root file system itself is built (and cached)
# by tests/systemd/make-rootfs.sh.
set -euo pipefail
source "$(dirname "$0")/../lib/apt.sh"
rt_apt_install setup.d/systemd-container debootstrap systemd-container dpkg-dev file git
