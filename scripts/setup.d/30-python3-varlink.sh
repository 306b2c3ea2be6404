#!/usr/bin/env bash
# Third-party varlink peers for tests/integration/test_varlink_peer.py:
#  - python3-varlink (CLI and library for Debian's /usr/bin/python3). Debian 12
#    has it only in bookworm-backports: add that suite (same mirror as the
#    configured bookworm source, main only; apt pins backports below the
#    release, so nothing else changes) and install from it with -t.
#  - varlink-go (main): its interface generator is a second IDL parser.
# Idempotent: does nothing when both are installed.
set -euo pipefail
source "$(dirname "$0")/../lib/apt.sh"
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
installed python3-varlink && installed varlink-go && exit 0

if ! grep -rqs '^[^#]*bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  # The mirror the machine already uses for bookworm (deb822 or one-line format).
  mirror=$(awk '/^URIs:/ {u=$2} /^Suites:/ && / bookworm( |$)/ {print u; exit}' \
             /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  if [ -z "$mirror" ]; then
    mirror=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' \
               /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)
  fi
  mirror=${mirror:-http://deb.debian.org/debian}
  echo "setup.d/python3-varlink: adding bookworm-backports from $mirror"
  printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$mirror" | ${SUDO:-} tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null
fi
rt_apt_install setup.d/python3-varlink -t bookworm-backports python3-varlink varlink-go
