#!/usr/bin/env bash
# Integration tests of authorisation and durability: useradd/groupadd/userdel
# (passwd), setpriv (util-linux), mount/umount of small tmpfs state dirs (mount).
set -euo pipefail
missing=()
for p in passwd util-linux mount; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
${SUDO:-} apt-get update -qq
DEBIAN_FRONTEND=noninteractive ${SUDO:-} apt-get install -y -qq --no-install-recommends "${missing[@]}"
