#!/usr/bin/env bash
# Install what resource-tracker needs on Debian 12 and build it, one line per step
# (the output of apt and of the build is shown only when a step fails).
#   scripts/setup.sh          build dependencies; the product in ./build: Release,
#                             prefix /usr, no tests (what `cpack -G DEB` packages)
#   scripts/setup.sh --test   also the test dependencies (scripts/setup.d/*.sh); the
#                             test suite in ./build-asan (ASan+UBSan) and ./build-rel (Release),
#                             the fuzzers in ./build-fuzz (clang, libFuzzer, ASan+UBSan)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/apt.sh

mode=product
[ "${1:-}" = "--test" ] && mode=test

SUDO=
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export SUDO

# The compiler, CMake and the libraries (libncurses-dev: `resource-trackerctl
# top`); systemd for systemd.pc (where units go); file and dpkg-dev
# (dpkg-shlibdeps) for `cpack -G DEB`.
BUILD_DEPS=(gcc make cmake pkg-config libsystemd-dev libcurl4-openssl-dev zlib1g-dev
            libjson-c-dev libconfig-dev libssl-dev libncurses-dev systemd file dpkg-dev
            libjs-dygraphs)  # run time: `resource-trackerctl report` inlines dygraphs
# Tests: cmocka for the unit tests; Debian's python3 drives integration tests;
# setpriv/runuser (util-linux) and useradd (passwd) run clients as real
# unprivileged users; git for the container test's clean clone.
TEST_DEPS=(libcmocka-dev python3 util-linux passwd procps iproute2 curl ca-certificates git
           clang libclang-rt-14-dev)  # the fuzzers (tests/fuzz): clang, libFuzzer and its sanitizers

if [ "$mode" = test ]; then
  rt_apt_install setup "${BUILD_DEPS[@]}" "${TEST_DEPS[@]}"
  # Test fixtures install their own packages.
  for f in scripts/setup.d/*.sh; do
    [ -e "$f" ] && bash "$f"
  done
else
  rt_apt_install setup "${BUILD_DEPS[@]}"
fi

# build DIR CMAKE-ARGS…: configure and build, the output in DIR/setup.log.
build() {
  local dir=$1
  shift
  echo "setup: building ./$dir"
  mkdir -p "$dir"
  if ! { cmake -S . -B "$dir" "$@" && cmake --build "$dir" -j"$(nproc)"; } >"$dir/setup.log" 2>&1; then
    cat "$dir/setup.log" >&2
    echo "setup: the build in ./$dir failed" >&2
    exit 1
  fi
}

if [ "$mode" = test ]; then
  build build-asan -DRT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
  build build-rel -DCMAKE_BUILD_TYPE=Release
  build build-fuzz -DCMAKE_C_COMPILER=clang -DRT_SANITIZE=ON -DRT_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug
else
  build build -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DRT_BUILD_TESTS=OFF
fi
