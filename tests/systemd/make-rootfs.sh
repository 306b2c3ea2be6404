#!/usr/bin/env bash
# Build (once) a fresh Debian 12 root file system that boots under
# systemd-nspawn, cached outside any build dir so reruns are fast. It has
# nothing of the project: the container test builds the package in one copy
# and installs it (with its Depends, from the mirror) in another.
#   tests/systemd/make-rootfs.sh     -> prints the rootfs directory
# The cache key is the package list, so changing it builds a fresh tree.
# Overrides: RT_TEST_CACHE (default /var/cache/resource-tracker-tests),
# RT_DEBIAN_MIRROR (default: the Debian URI apt already uses).
set -euo pipefail

# minbase (apt, dpkg, coreutils …) with systemd as PID 1, as a Debian 12
# machine has it; passwd for a real unprivileged user.
PKGS=systemd,systemd-sysv,dbus,passwd

cache=${RT_TEST_CACHE:-/var/cache/resource-tracker-tests}
key=$(printf '%s\n' "bookworm minbase $PKGS" | sha256sum | cut -c1-12)
root="$cache/rootfs-bookworm-$key"
if [ -x "$root/lib/systemd/systemd" ]; then
  echo "$root"
  exit 0
fi

mirror=${RT_DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(grep -rhoE 'https?://[^ ]*/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null |
           head -n1 | tr -d ' ' || true)
  mirror=${mirror:-http://deb.debian.org/debian}
fi

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if [ ! -x "$root/lib/systemd/systemd" ]; then
  tmp=$(mktemp -d "$cache/.rootfs.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "make-rootfs: debootstrap bookworm from $mirror into $root (about a minute)" >&2
  debootstrap --variant=minbase --include="$PKGS" bookworm "$tmp" "$mirror" >"$cache/debootstrap.log" 2>&1 || {
    tail -n 20 "$cache/debootstrap.log" >&2
    exit 1
  }
  # A boot without a login prompt or network waits; nothing to configure.
  echo rt-test >"$tmp/etc/hostname"
  rm -f "$tmp/var/cache/apt/archives/"*.deb
  mv "$tmp" "$root"
  trap - EXIT
fi
echo "$root"
