#!/usr/bin/env bash
# Fixtures of the live view and the exporter tests: Debian's prometheus
# (the server and promtool; the tests start their own instance on loopback)
# and tmux (a terminal for `resource-trackerctl top`). Idempotent.
# Installing prometheus starts its packaged service where systemd runs: the
# tests need only the binaries, so a service this script brought up is
# stopped and disabled again (nothing listens on :9090 because of us).
set -euo pipefail
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in prometheus tmux; do
  installed "$p" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
had_prometheus=0
installed prometheus && had_prometheus=1
echo "setup.d/prometheus-tmux: installing ${missing[*]}"
${SUDO:-} apt-get update -qq
DEBIAN_FRONTEND=noninteractive ${SUDO:-} apt-get install -y -qq --no-install-recommends "${missing[@]}"
if [ $had_prometheus -eq 0 ] && [ -d /run/systemd/system ]; then
  ${SUDO:-} systemctl disable --now prometheus.service >/dev/null 2>&1 || true
fi
