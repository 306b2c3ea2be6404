# The shipped units load cleanly in systemd 252's own parser and keep their
# hardening. systemd-analyze verify exits 0 even for values it ignores
# ("Failed to parse …, ignoring"), so its stderr must be empty.
set -euo pipefail
command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze"; exit 0; }

units="$RT_BUILD_DIR/units"
tmp=$(mktemp -d /tmp/rt-units.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# verify needs the Exec binaries to exist: point them at the built daemon.
stage() {
  rm -rf "$tmp/u" && mkdir "$tmp/u"
  cp "$units/resource-trackerd.service" "$units/resource-trackerd.socket" "$tmp/u/"
  sed -i -e "s|^ExecStart=.*|ExecStart=$RT_DAEMON|" \
    -e "s|^ExecReload=[^ ]*/resource-trackerd |ExecReload=$RT_DAEMON |" "$tmp/u/resource-trackerd.service"
}
verify() {
  systemd-analyze verify --man=no "$tmp/u/resource-trackerd.service" "$tmp/u/resource-trackerd.socket" \
    >"$tmp/out" 2>"$tmp/err"
}

stage
verify || fail "verify exited $?: $(cat "$tmp/err")"
[ ! -s "$tmp/err" ] || fail "verify complained: $(cat "$tmp/err")"

# The check itself catches what verify lets through.
sed -i 's/^Type=notify$/Type=notfy/; s/^WatchdogSec=.*/WatchdogSec=abc/' "$tmp/u/resource-trackerd.service"
verify || true
grep -q "Failed to parse service type" "$tmp/err" || fail "bad Type= not reported: $(cat "$tmp/err")"
grep -q "Failed to parse sec value, ignoring: abc" "$tmp/err" || fail "bad WatchdogSec= not reported"

stage
systemd-analyze security --offline=true "$tmp/u/resource-trackerd.service" >"$tmp/out" 2>"$tmp/err" ||
  fail "security exited $?: $(cat "$tmp/err")"
[ ! -s "$tmp/err" ] || fail "security complained: $(cat "$tmp/err")"
level=$(sed -n 's/.*Overall exposure level for resource-trackerd.service: \([0-9.]*\).*/\1/p' "$tmp/out")
[ -n "$level" ] || fail "no exposure level in: $(tail -3 "$tmp/out")"
echo "exposure level $level"
awk -v l="$level" 'BEGIN { exit !(l <= 3.5) }' || fail "exposure level $level above 3.5: hardening was weakened"

# Settings the daemon's design depends on (docs/systemd.md).
svc="$units/resource-trackerd.service"
for line in Type=notify NotifyAccess=main WatchdogSec=30 Restart=on-failure RestartPreventExitStatus=78 \
            'ExecReload=/bin/kill -HUP $MAINPID' RuntimeDirectory=resource-tracker \
            RuntimeDirectoryPreserve=yes StateDirectory=resource-tracker \
            ConfigurationDirectory=resource-tracker ProtectHome=read-only DevicePolicy=closed \
            'DeviceAllow=char-nvidia* rw' 'DeviceAllow=char-drm rw' 'DeviceAllow=char-kfd rw' \
            'SetCredential=sentinel-token:\n' 'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK'; do
  grep -qxF "$line" "$svc" || fail "$svc lacks '$line'"
done
grep -qx 'LoadCredential=sentinel-token:/.*/sentinel-token' "$svc" || fail "no LoadCredential= for the token"
# A reload checks the configuration before it signals the daemon.
reload=$(grep '^ExecReload=' "$svc" | sed 's|^ExecReload=/[^ ]*/sbin/resource-trackerd |ExecReload=DAEMON |')
[ "$reload" = "ExecReload=DAEMON --check-config --quiet
ExecReload=/bin/kill -HUP \$MAINPID" ] || fail "ExecReload= is not the check, then the signal: $reload"
# Each of these hides other users' processes, host /proc files, the GPUs
# or the network from the daemon.
for bad in ProcSubset= ProtectProc= PrivateDevices= PrivateNetwork= PrivateUsers= DynamicUser= IPAddressDeny=; do
  ! grep -q "^$bad" "$svc" || fail "$svc sets $bad, which breaks sampling"
done
sock="$units/resource-trackerd.socket"
for line in ListenStream=/run/resource-tracker/com.sparecores.ResourceTracker SocketMode=0666 \
            FileDescriptorName=varlink; do
  grep -qxF "$line" "$sock" || fail "$sock lacks '$line'"
done
echo ok
