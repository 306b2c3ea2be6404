#!/usr/bin/env bash
# Debian's chromium renders the HTML report in tests/integration/test_report.py
# (headless, no network). Idempotent: does nothing when it is installed.
set -euo pipefail
dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed" && exit 0
echo "setup.d/chromium: installing chromium"
${SUDO:-} apt-get update -qq
DEBIAN_FRONTEND=noninteractive ${SUDO:-} apt-get install -y -qq --no-install-recommends chromium
