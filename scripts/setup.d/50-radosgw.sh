#!/usr/bin/env bash
# Ceph radosgw (a strict SigV4 S3 server) for the upload integration tests:
# mon + memstore osd + rgw on 127.0.0.1, started by tests/upload/rgw.py.
set -euo pipefail
PKGS=(radosgw ceph-mon ceph-osd ceph-common)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "setup.d/radosgw: installing ${missing[*]}"
${SUDO:-} apt-get update -qq
DEBIAN_FRONTEND=noninteractive ${SUDO:-} apt-get install -y -qq --no-install-recommends "${missing[@]}"
