#!/usr/bin/env bash
# Install everything resource-tracker needs on Debian 12 and build it.
#   scripts/setup.sh            build dependencies, release build in ./build
#   scripts/setup.sh --test     also the test dependencies, ASan+UBSan build in ./build-asan
set -euo pipefail
cd "$(dirname "$0")/.."

mode=release
[ "${1:-}" = "--test" ] && mode=test

SUDO=
[ "$(id -u)" -ne 0 ] && SUDO=sudo

BUILD_DEPS=(gcc make cmake pkg-config libsystemd-dev libcurl4-openssl-dev zlib1g-dev
            libjson-c-dev libconfig-dev libssl-dev libcmocka-dev)
# Run time, beyond the libraries: `resource-trackerctl report` inlines dygraphs.
RUN_DEPS=(libjs-dygraphs)
# Tests: Debian's python3 drives integration tests; setpriv/runuser (util-linux)
# and useradd (passwd) run clients as real unprivileged users.
TEST_DEPS=(python3 util-linux passwd procps iproute2 curl ca-certificates)

missing=()
want=("${BUILD_DEPS[@]}" "${RUN_DEPS[@]}")
[ "$mode" = test ] && want+=("${TEST_DEPS[@]}")
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Optional test fixtures install their own packages (see tests/fixtures/*.sh).
if [ "$mode" = test ]; then
  for f in scripts/setup.d/*.sh; do
    [ -e "$f" ] && SUDO="$SUDO" bash "$f"
  done
fi

jobs=$(nproc)
if [ "$mode" = test ]; then
  cmake -S . -B build-asan -DRT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
  cmake --build build-asan -j"$jobs"
else
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build build -j"$jobs"
fi
