# A package made as README's "Building by hand" says (a fresh build directory,
# no prefix given, then `cpack -G DEB`) installs into /usr and /etc, where the
# docs and the units have the files, and its daemon reads the packaged
# configuration; a build configured for another prefix is refused by cpack,
# which says how to configure, before anything is built.
set -euo pipefail
tmp=$(mktemp -d /tmp/rt-handpkg.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
if ! command -v dpkg-deb >/dev/null || ! command -v dpkg-shlibdeps >/dev/null; then
  echo "skip: no dpkg-dev (scripts/setup.sh installs it)"
  exit 0
fi

# -DCMAKE_INSTALL_PREFIX=/usr/local: refused at once, with the way out.
cmake -S "$RT_SOURCE_DIR" -B "$tmp/local" -DRT_BUILD_TESTS=OFF -DCMAKE_INSTALL_PREFIX=/usr/local \
  >"$tmp/local.log" 2>&1 || { cat "$tmp/local.log"; fail "configure with /usr/local"; }
rc=0
(cd "$tmp/local" && cpack -G DEB) >"$tmp/refused" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "cpack packaged a /usr/local build"
grep -q "configure with -DCMAKE_INSTALL_PREFIX=/usr" "$tmp/refused" || fail "refusal without its reason: $(cat "$tmp/refused")"
[ ! -e "$tmp/local/daemon/resource-trackerd" ] || fail "the refused package built the daemon first"

# The hand build: no prefix given.
cmake -S "$RT_SOURCE_DIR" -B "$tmp/build" -DRT_BUILD_TESTS=OFF >"$tmp/build.log" 2>&1 &&
  cmake --build "$tmp/build" -j2 >>"$tmp/build.log" 2>&1 || { tail -40 "$tmp/build.log"; fail "hand build"; }
(cd "$tmp/build" && cpack -G DEB) >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log"; fail cpack; }
deb=$(ls "$tmp"/build/resource-tracker_*.deb)
dpkg-deb -c "$deb" | awk '{ print $6 }' >"$tmp/contents"
! grep -v -E '^\./((usr|etc|lib)/.*)?$' "$tmp/contents" || fail "files outside /usr, /etc and /lib"
! grep -q '^\./usr/local' "$tmp/contents" || fail "files under /usr/local: $(grep '^\./usr/local' "$tmp/contents")"
for f in ./usr/sbin/resource-trackerd ./usr/bin/resource-trackerctl ./etc/resource-tracker/resource-trackerd.conf \
         ./usr/share/man/man8/resource-trackerd.8.gz ./usr/share/doc/resource-tracker/copyright; do
  grep -qx "$f" "$tmp/contents" || fail "package lacks $f"
done
unit=$(grep -E '/systemd/system/resource-trackerd\.service$' "$tmp/contents") || fail "package lacks the unit"
dpkg-deb -e "$deb" "$tmp/control"
[ "$(cat "$tmp/control/conffiles")" = /etc/resource-tracker/resource-trackerd.conf ] ||
  fail "conffiles: $(cat "$tmp/control/conffiles")"
dpkg-deb -x "$deb" "$tmp/root"
grep -qx "ExecStart=/usr/sbin/resource-trackerd" "$tmp/root/$unit" || fail "the unit starts another binary"
# Its daemon reads the configuration the package installs.
"$tmp/root/usr/sbin/resource-trackerd" --help | grep -q "default /etc/resource-tracker/resource-trackerd.conf" ||
  fail "the packaged daemon looks for its configuration elsewhere: $("$tmp/root/usr/sbin/resource-trackerd" --help | grep -- --config)"
echo ok
