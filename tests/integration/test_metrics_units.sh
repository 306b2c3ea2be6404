# The exporter's units (resource-tracker-exporter.socket and @.service, the
# textfile writer) load cleanly in systemd 252's parser, stay unprivileged and
# publish the host only unless the administrator says otherwise
# (docs/metrics.md). verify exits 0 even for values it ignores, so its stderr
# must be empty.
set -euo pipefail
command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze"; exit 0; }

units="$RT_BUILD_DIR/units"
tmp=$(mktemp -d /tmp/rt-metrics-units.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
names=(resource-tracker-exporter.socket resource-tracker-exporter@.service resource-tracker-textfile.service)

# verify needs ExecStart= to exist: point it at the built client.
for u in "${names[@]}"; do
  cp "$units/$u" "$tmp/"
  sed -i "s|^ExecStart=[^ ]*resource-trackerctl |ExecStart=$RT_CTL |" "$tmp/$u"
done
(cd "$tmp" && systemd-analyze verify --man=no "${names[@]}") >"$tmp/out" 2>"$tmp/err" ||
  fail "verify exited $?: $(cat "$tmp/err")"
[ ! -s "$tmp/err" ] || fail "verify complained: $(cat "$tmp/err")"
# The check catches a bad value in the template too.
sed 's/^RuntimeMaxSec=.*/RuntimeMaxSec=abc/' "$tmp/resource-tracker-exporter@.service" >"$tmp/bad@.service"
(cd "$tmp" && systemd-analyze verify --man=no bad@.service) >/dev/null 2>"$tmp/err" || true
grep -q "Failed to parse sec value, ignoring: abc" "$tmp/err" || fail "a bad template value was not reported"

for u in resource-tracker-exporter@.service resource-tracker-textfile.service; do
  systemd-analyze security --offline=true "$tmp/$u" >"$tmp/out" 2>"$tmp/err" || fail "security $u exited $?"
  [ ! -s "$tmp/err" ] || fail "security $u complained: $(cat "$tmp/err")"
  level=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$tmp/out")
  echo "$u: exposure level $level"
  awk -v l="$level" 'BEGIN { exit !(l <= 1.5) }' || fail "$u exposure level $level above 1.5"
done

sock="$units/resource-tracker-exporter.socket"
for line in ListenStream=127.0.0.1:10120 Accept=yes; do
  grep -qxF "$line" "$sock" || fail "$sock lacks '$line'"
done
svc="$units/resource-tracker-exporter@.service"
for line in DynamicUser=yes Environment=JOBS=none Environment=TOKEN_FILE= StandardInput=socket StandardOutput=socket \
            RestrictAddressFamilies=AF_UNIX; do
  grep -qxF "$line" "$svc" || fail "$svc lacks '$line'"
done
grep -qx 'ExecStart=.*/resource-trackerctl metrics --http --jobs=${JOBS} --keep-ended=${KEEP_ENDED} --bearer-token-file=${TOKEN_FILE}' "$svc" ||
  fail "$svc: ExecStart"
txt="$units/resource-tracker-textfile.service"
for line in DynamicUser=yes Environment=JOBS=none RuntimeDirectory=resource-tracker-metrics \
            RuntimeDirectoryMode=0755; do
  grep -qxF "$line" "$txt" || fail "$txt lacks '$line'"
done
# Publishing every user's jobs is the administrator's explicit choice.
! grep -q '^SupplementaryGroups=' "$svc" "$txt" || fail "an exporter unit joins a group by default"
echo ok
