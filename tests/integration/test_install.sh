# `cmake --install` and the Debian package: every file in place, each one
# usable by the tool that reads it (man, bash, systemd-sysusers, journalctl),
# and a package that enables nothing by itself.
set -euo pipefail
tmp=$(mktemp -d /tmp/rt-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cache() { sed -n "s/^$1:[A-Z]*=//p" "$RT_BUILD_DIR/CMakeCache.txt"; }

prefix=$(cache CMAKE_INSTALL_PREFIX)
DESTDIR="$tmp/root" cmake --install "$RT_BUILD_DIR" >/dev/null
root="$tmp/root"

abs() { case $1 in /*) echo "$root$1" ;; *) echo "$root$prefix/$1" ;; esac; }
unitdir=$(abs "$(cache RT_SYSTEMD_UNIT_DIR)")
sysusersdir=$(abs "$(cache RT_SYSUSERS_DIR)")
catalogdir=$(abs "$(cache RT_CATALOG_DIR)")
complete=$(abs "$(cache RT_COMPLETIONS_DIR)")/resource-trackerctl
# The daemon's configuration directory, as the unit names it.
confdir=$(sed -n 's|^LoadCredential=sentinel-token:\(.*\)/sentinel-token$|\1|p' "$unitdir/resource-trackerd.service")
[ -n "$confdir" ] || fail "no LoadCredential= in the installed unit"

for f in "$root$prefix/sbin/resource-trackerd" "$root$prefix/bin/resource-trackerctl" \
         "$unitdir/resource-trackerd.service" "$unitdir/resource-trackerd.socket" \
         "$root$confdir/resource-trackerd.conf" "$sysusersdir/resource-tracker.conf" \
         "$catalogdir/resource-tracker.catalog" "$complete" \
         "$root$prefix/share/man/man8/resource-trackerd.8.gz" \
         "$root$prefix/share/man/man1/resource-trackerctl.1.gz" \
         "$root$prefix/share/man/man5/resource-trackerd.conf.5.gz" \
         "$root$prefix/share/doc/resource-tracker/copyright"; do
  [ -f "$f" ] || fail "not installed: ${f#"$root"}"
done
[ -f "$root$prefix/share/resource-tracker/com.sparecores.ResourceTracker.varlink" ] || fail "IDL not installed"
# The client's modules (ctl/module.h), where the installed client looks for them.
moduledir=$(strings -a "$root$prefix/bin/resource-trackerctl" | grep -x "$prefix/lib.*/resource-tracker")
for m in ctl-top.so ctl-http.so; do
  [ -f "$root$moduledir/$m" ] || fail "module $m not installed in $moduledir"
done
cmp -s "$root$confdir/resource-trackerd.conf" "$RT_SOURCE_DIR/etc/resource-trackerd.conf" ||
  fail "installed configuration differs from etc/resource-trackerd.conf"
# The unit starts the binary that was installed.
grep -qx "ExecStart=$prefix/sbin/resource-trackerd" "$unitdir/resource-trackerd.service" ||
  fail "ExecStart= does not name $prefix/sbin/resource-trackerd"
grep -qx "ExecReload=$prefix/sbin/resource-trackerd --check-config --quiet" "$unitdir/resource-trackerd.service" ||
  fail "ExecReload= does not check with $prefix/sbin/resource-trackerd"

# Man pages: valid gzip, and man renders them without a warning.
for page in "$root$prefix"/share/man/man*/*.gz; do
  gzip -t "$page" || fail "$page is not gzip"
  if command -v man >/dev/null; then
    warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
    [ -z "$warnings" ] || fail "man warns about $page: $warnings"
  fi
done

# resource-trackerd(8) lists exactly the daemon's long options (aliases too),
# resource-trackerd.conf(5) exactly the keys the file accepts, each in its section.
opts=$(sed -n 's/^ *{"\([a-z0-9-]*\)", *[a-z_]*_argument,.*/--\1/p' "$RT_SOURCE_DIR/daemon/config/options.c" | sort -u)
[ "$(wc -l <<<"$opts")" -ge 15 ] || fail "cannot read the long options from daemon/config/options.c"
documented=$(sed -n '/^\.SH OPTIONS/,/^\.SH /p' "$RT_SOURCE_DIR/docs/man/resource-trackerd.8" |
  grep -oE '^\.(B|BI|BR) .*' | grep -oE '(\\-){2}[a-z0-9]([a-z0-9]|\\-)*' | sed 's/\\//g' | sort -u)
diff -u <(echo "$opts") <(echo "$documented") || fail "resource-trackerd.8 OPTIONS differ from daemon/config/options.c"
keys=$("$RT_DAEMON" --check-config --config /dev/null |
  awk '/^[a-z_]+: \{$/ { g = $1; sub(":", "", g); next } /^\};$/ { g = ""; next }
       /^ *[a-z_0-9]+ = / { print (g == "" ? "" : g ".") $1 }' | sort)
[ "$(wc -l <<<"$keys")" -ge 15 ] || fail "cannot read the keys from --check-config"
documented=$(awk '/^\.SH / { s = $2; next } /^\.BR [a-z_0-9]+ " \(/ && s != "" && s != "EXAMPLE" && s != "SEE" {
                print (s == "TOP-LEVEL" ? "" : s ".") $2 }' "$RT_SOURCE_DIR/docs/man/resource-trackerd.conf.5" | sort)
diff -u <(echo "$keys") <(echo "$documented") || fail "resource-trackerd.conf.5 keys differ from the daemon's"

# Bash completion: parses and registers itself.
bash -n "$complete" || fail "completion has a syntax error"
[ "$(bash -c "source '$complete'; complete -p resource-trackerctl")" = \
  "complete -F _resource_trackerctl resource-trackerctl" ] || fail "completion does not register"
# What it completes, with stand-ins for bash-completion's helpers, asking the
# installed client (test_completion.py drives the real helpers).
cat >"$tmp/comp.sh" <<'COMP'
source "$1"
export PATH="$2:$PATH" RESOURCE_TRACKER_SOCKET=/nonexistent
_init_completion() { words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; cur=${words[cword]}; prev=${words[cword-1]}; }
_command_offset() { COMPREPLY=("<command at $1>"); }
_filedir() { COMPREPLY=("<files>"); }
_pids() { COMPREPLY=("<pids>"); }
comp() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _resource_trackerctl; echo "${COMPREPLY[*]}"; }
comp resource-trackerctl st
comp resource-trackerctl --socket /x j
comp resource-trackerctl run --form
comp resource-trackerctl run --format ""
comp resource-trackerctl run -q --job-name x py
comp resource-trackerctl run -- python3 tr
comp resource-trackerctl start --pid ""
comp resource-trackerctl samples train --f
comp resource-trackerctl re
comp resource-trackerctl report train --h
comp resource-trackerctl report -o ""
comp resource-trackerctl recommend --history 3 train --j
COMP
printf '%s\n' "start stop status" "jobs" "--format" "json csv" "<command at 5>" "<command at 3>" "<pids>" \
  "--follow --format" "report recommend" "--history --help" "<files>" "--json" >"$tmp/comp.want"
bash "$tmp/comp.sh" "$complete" "$root$prefix/bin" >"$tmp/comp.got" 2>&1 || fail "completion failed: $(cat "$tmp/comp.got")"
diff -u "$tmp/comp.want" "$tmp/comp.got" || fail "completion completes the wrong words"

# sysusers.d creates the admin group.
if command -v systemd-sysusers >/dev/null; then
  mkdir -p "$tmp/sys/etc"
  systemd-sysusers --root="$tmp/sys" "$sysusersdir/resource-tracker.conf" >/dev/null 2>&1
  grep -q '^resource-tracker:x:[0-9]*:$' "$tmp/sys/etc/group" || fail "sysusers.d did not create the group"
fi

# The catalog compiles and has a text for every MESSAGE_ID in events.h.
if command -v journalctl >/dev/null; then
  mkdir -p "$tmp/cat/usr/lib/systemd/catalog"
  cp "$catalogdir/resource-tracker.catalog" "$tmp/cat/usr/lib/systemd/catalog/"
  journalctl --root="$tmp/cat" --update-catalog
  journalctl --root="$tmp/cat" --list-catalog >"$tmp/catalog.txt"
  ids=$(sed -n 's/^#define RT_MSGID_[A-Z_]* "\([0-9a-f]*\)"$/\1/p' "$RT_SOURCE_DIR/daemon/system/events.h")
  [ "$(echo "$ids" | wc -l)" -ge 10 ] || fail "cannot read the MESSAGE_IDs from events.h"
  for id in $ids; do
    grep -q "^$id resource-tracker: " "$tmp/catalog.txt" || fail "catalog has no entry for $id"
  done
fi

# The Debian package: shlibdeps dependencies, the conffile, maintainer
# scripts that start or enable nothing. A build directory configured for
# another prefix (an older one kept /usr/local) is not packaged: cpack says
# why (test_hand_package.sh).
if [ "$prefix" != /usr ] && command -v dpkg-deb >/dev/null; then
  ! (cd "$RT_BUILD_DIR" && cpack -G DEB -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1) || fail "cpack packaged prefix $prefix"
  grep -q "configure with -DCMAKE_INSTALL_PREFIX=/usr" "$tmp/cpack.log" || fail "cpack: $(cat "$tmp/cpack.log")"
elif command -v dpkg-deb >/dev/null && command -v dpkg-shlibdeps >/dev/null; then
  (cd "$RT_BUILD_DIR" && cpack -G DEB -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; fail cpack; }
  deb=$(ls "$tmp"/pkg/resource-tracker_*.deb)
  depends=$(dpkg-deb -f "$deb" Depends)
  [[ $depends == *"libc6 (>="* ]] || fail "no shlibdeps dependencies: $depends"
  [[ $depends == *procps* ]] || fail "no procps dependency (ExecReload's kill): $depends"
  [[ $depends == *libjs-dygraphs* ]] || fail "no libjs-dygraphs dependency (report): $depends"
  # Every library a packaged binary links is a dependency (the package that
  # holds it on this machine), and the binaries are stripped and carry no
  # path of this build tree.
  dpkg-deb -x "$deb" "$tmp/deb"
  multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
  # (the client's modules too: their libraries, libncursesw6 and libcurl4, come through them)
  modules=$(find "$tmp/deb" -name 'ctl-*.so' | sort)
  [ "$(echo "$modules" | wc -w)" = 2 ] || fail "the package lacks the client's modules: $modules"
  for lib in libncursesw6 libcurl4; do
    [[ ", $depends," == *", $lib "* || ", $depends," == *", $lib,"* ]] || fail "Depends lacks $lib: $depends"
  done
  for bin in "$tmp/deb$prefix/sbin/resource-trackerd" "$tmp/deb$prefix/bin/resource-trackerctl" $modules; do
    readelf -d "$bin" >"$tmp/dynamic"
    for lib in $(sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' "$tmp/dynamic"); do
      pkg=$({ dpkg -S "/lib/$multiarch/$lib" "/usr/lib/$multiarch/$lib" 2>/dev/null || true; } | cut -d: -f1 | head -n1)
      [ -n "$pkg" ] || fail "no package holds $lib"
      [[ ", $depends," == *", $pkg "* || ", $depends," == *", $pkg,"* ]] ||
        fail "$(basename "$bin") links $lib ($pkg), not in Depends: $depends"
    done
    readelf -S "$bin" >"$tmp/sections"
    ! grep -q '\.debug_info' "$tmp/sections" || fail "$(basename "$bin") is not stripped"
    # (the sanitizers' own records keep absolute paths: not a build to ship)
    if [ "$(cache RT_SANITIZE)" != ON ]; then
      strings -a "$bin" >"$tmp/strings"
      ! grep -qF -e "$RT_SOURCE_DIR/" -e "$RT_BUILD_DIR/" "$tmp/strings" || fail "$(basename "$bin") names the build tree"
    fi
  done
  # Release builds (-g) put the debug information into the -dbgsym package.
  if [ "$(cache CMAKE_BUILD_TYPE)" = Release ]; then
    dbg=$(ls "$tmp"/pkg/resource-tracker-dbgsym_*.ddeb) || fail "no -dbgsym package"
    ids=$(dpkg-deb -f "$dbg" Build-Ids)
    for bin in "$tmp/deb$prefix/"*/resource-trackerd "$tmp/deb$prefix/"*/resource-trackerctl $modules; do
      id=$(file -L "$bin" | sed -n 's/.*BuildID\[sha1\]=\([0-9a-f]*\).*/\1/p')
      [[ " $ids " == *" $id "* ]] || fail "-dbgsym lacks $(basename "$bin")'s build ID $id: $ids"
    done
  fi
  dpkg-deb -e "$deb" "$tmp/control"
  conf=$confdir/resource-trackerd.conf
  [ "$(cat "$tmp/control/conffiles")" = "$conf" ] || fail "conffiles: $(cat "$tmp/control/conffiles")"
  for s in postinst prerm postrm; do
    [ -x "$tmp/control/$s" ] || fail "$s is not executable"
    sh -n "$tmp/control/$s" || fail "$s has a syntax error"
  done
  # (try-restart on upgrade restarts only a daemon the admin had running)
  grep -v '^[[:space:]]*#' "$tmp/control/postinst" >"$tmp/postinst.code"
  ! grep -Eq 'systemctl[^|;]*[[:space:]](enable|start|restart|reload)([[:space:]]|$)' "$tmp/postinst.code" ||
    fail "postinst enables or starts something"
  dpkg-deb -c "$deb" >"$tmp/contents"  # not piped into grep -q: SIGPIPE under pipefail
  grep -q "\./${conf#/}\$" "$tmp/contents" || fail "package lacks $conf"
  copyright=$prefix/share/doc/resource-tracker/copyright
  grep -q "^-rw-r--r-- .* \./${copyright#/}\$" "$tmp/contents" || fail "package lacks $copyright (0644)"
fi
echo ok
