#!/usr/bin/env bash
# The systemd container test (tests/systemd/) boots a debootstrapped Debian
# 12 with systemd-nspawn and installs the .deb built by CPack into it; it needs
# debootstrap, systemd-nspawn and dpkg-shlibdeps/dpkg-deb. The root file system
# itself is built (and cached) by tests/systemd/make-rootfs.sh.
set -euo pipefail
want=(debootstrap systemd-container dpkg-dev file)
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "setup.d/40-systemd-container: installing ${missing[*]}"
${SUDO:-} apt-get update -qq
DEBIAN_FRONTEND=noninteractive ${SUDO:-} apt-get install -y -qq --no-install-recommends "${missing[@]}"
