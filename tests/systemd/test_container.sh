# The admin's path end to end, in fresh Debian 12 root file systems under
# systemd-nspawn (systemd 252):
#   0. the README's service commands, exactly as written, build the package in
#      one from a clean clone of this tree (HEAD and uncommitted changes to
#      tracked files); `apt-get install` of it into another that has none of
#      the build dependencies pulls every library from Depends; that one boots;
#   A. the install created the admin group and enabled nothing;
#   B. the units with a stand-in daemon (tests/tools/rt_service_standin.c)
#      that drives config, notify, events and credentials like the daemon:
#      enable --now, STATUS, journal fields, reload (a refused file fails the
#      reload, the daemon keeps its configuration), the token credential,
#      socket activation after a stop, a watchdog kill and restart, exit 78 on
#      a bad file without a restart loop;
#   C. the real resource-trackerd, enabled by the README's command, with
#      resource-trackerctl as root and as an unprivileged user: READY/STATUS,
#      job records, socket activation, the watchdog, reload and drop-ins;
#   D. the Prometheus exporter through its socket unit and the textfile mode;
#   E. transient scopes through sd-bus (tests/tools/rt_sdscope), on the system
#      manager and on a user's.
# Skips (77) when not root or without systemd-nspawn or git; the root file
# system is built once by make-rootfs.sh and cached, with the apt archives
# (/var/cache/resource-tracker-tests).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/container.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
for t in systemd-nspawn nsenter dpkg-deb git; do
  command -v "$t" >/dev/null || { echo "SKIP: no $t (scripts/setup.d/40-systemd-container.sh)"; exit 77; }
done
git -C "$RT_SOURCE_DIR" rev-parse --git-dir >/dev/null 2>&1 || { echo "SKIP: $RT_SOURCE_DIR is no git clone"; exit 77; }

rootfs=$("$here/make-rootfs.sh")
cache=$(dirname "$rootfs")
# One container at a time on this host: with --keep-unit, containers share
# the caller's cgroup, and each cleans up the cgroups its boot created.
exec 8>"$cache/.container.lock"
flock -w 900 8 || { echo "FAIL: another container test holds the lock"; exit 1; }
work=$(mktemp -d /tmp/rt-container.XXXXXX)
chmod 755 "$work"
cleanup() { ct_stop; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$cache/apt-archives"

step() { echo "--- $*"; }
fail() {
  echo "FAIL: $*"
  if [ -n "$CT_NSPAWN" ]; then
    ct systemctl status --no-pager resource-trackerd.service resource-trackerd.socket 2>&1 | tail -n 30 || true
    ct journalctl --no-pager -n 40 2>&1 || true
  fi
  exit 1
}
show() { ct systemctl show -p "$1" --value resource-trackerd.service; }
# Output is captured before grep looks at it: `cmd | grep -q` fails under
# pipefail when grep's early exit kills cmd with SIGPIPE.
# journal FILTER… : export-format records matching the filters
journal() { ct journalctl --no-pager -o export "$@"; }
records() { local out; out=$(journal "$@"); grep -ac '^MESSAGE=' <<<"$out" || true; }
has_record() { [ "$(records "$@")" -gt 0 ]; }
field() { # field NAME FILTER… : the value in the newest matching record
  local name=$1 out; shift
  out=$(journal -r -n 1 "$@")
  awk -v n="$name=" 'index($0, n) == 1 { print substr($0, length(n) + 1); exit }' <<<"$out"
}
unit_log() { ct journalctl --no-pager -u resource-trackerd; }
log_has() { local out; out=$(unit_log); grep -qF -- "$1" <<<"$out"; }
log_count() { local out; out=$(unit_log); grep -cF -- "$1" <<<"$out" || true; }
wait_active() { ct_wait "${2:-90}" ct sh -c "[ \"\$(systemctl show -p ActiveState --value $1)\" = active ]"; }
# WatchdogSec=3 and a stalled sampler (the test hook): systemd kills the
# daemon and starts it again.
watchdog_restart() {
  ct sh -c 'printf "[Service]\nWatchdogSec=3\n" > /etc/systemd/system/resource-trackerd.service.d/20-watchdog.conf'
  ct systemctl daemon-reload
  ct systemctl restart resource-trackerd
  local restarts timeouts stalls
  restarts=$(show NRestarts)
  timeouts=$(log_count "Watchdog timeout")
  stalls=$(log_count "sampler stalled")
  ct touch /run/resource-tracker/stall
  ct_wait 90 ct sh -c "[ \$(systemctl show -p NRestarts --value resource-trackerd) -gt $restarts ]" ||
    fail "no restart after the sampler stalled"
  ct rm -f /run/resource-tracker/stall
  [ "$(log_count "Watchdog timeout")" -gt "$timeouts" ] || fail "restart was not the watchdog's"
  [ "$(log_count "sampler stalled")" -gt "$stalls" ] || fail "the stall was not logged"
  wait_active resource-trackerd.service || fail "not active after the watchdog restart"
}

# refused_reload MESSAGE: `systemctl reload` fails, `systemctl status` says
# why, and the same daemon runs on.
refused_reload() {
  local pid rc=0 out
  pid=$(show MainPID)
  ct systemctl reload resource-trackerd >"$work/reload.out" 2>&1 || rc=$?
  [ $rc -ne 0 ] || fail "reload of a refused configuration exited 0"
  out=$(ct systemctl status --no-pager -n 20 resource-trackerd 2>&1 || true)
  grep -qF "resource-trackerd: $1" <<<"$out" || fail "systemctl status does not say '$1': $out"
  grep -qF "status=78/CONFIG" <<<"$out" || fail "systemctl status does not show the check's exit: $out"
  [ "$(show ActiveState)/$(show MainPID)" = "active/$pid" ] ||
    fail "not the same active daemon after a refused reload: $(show ActiveState)/$(show MainPID), was $pid"
}

MSG_STARTED=$(sed -n 's/^#define RT_MSGID_DAEMON_STARTED "\(.*\)"$/\1/p' "$RT_SOURCE_DIR/daemon/system/events.h")
MSG_STOPPED=$(sed -n 's/^#define RT_MSGID_DAEMON_STOPPED "\(.*\)"$/\1/p' "$RT_SOURCE_DIR/daemon/system/events.h")
MSG_FINISHED=$(sed -n 's/^#define RT_MSGID_JOB_FINISHED "\(.*\)"$/\1/p' "$RT_SOURCE_DIR/daemon/system/events.h")
MSG_RELOADED=$(sed -n 's/^#define RT_MSGID_CONFIG_RELOADED "\(.*\)"$/\1/p' "$RT_SOURCE_DIR/daemon/system/events.h")
MSG_REJECTED=$(sed -n 's/^#define RT_MSGID_CONFIG_REJECTED "\(.*\)"$/\1/p' "$RT_SOURCE_DIR/daemon/system/events.h")

# The README's service commands: build, package and install; enable.
mapfile -t readme < <(sed -n '/^## As a system service/,/^## /s/^    //p' "$RT_SOURCE_DIR/README.md")
[ ${#readme[@]} -eq 3 ] && [[ ${readme[1]} == *"cpack -G DEB"*") && apt-get install "* ]] &&
  [[ ${readme[2]} == "systemctl enable "* ]] ||
  fail "README.md's service commands are not build+package+install, enable: $(printf '\n  %s' "${readme[@]}")"
install=${readme[1]#*) && }
# A person answers apt's questions; here a configuration file does.
yes='echo "APT::Get::Assume-Yes \"true\";" > /etc/apt/apt.conf.d/90rt-test-yes'
apt_cache=(--bind="$cache/apt-archives":/var/cache/apt/archives --setenv=DEBIAN_FRONTEND=noninteractive)

step "clean clone of $(git -C "$RT_SOURCE_DIR" rev-parse --short HEAD) (and uncommitted changes of tracked files)"
rev=$(git -C "$RT_SOURCE_DIR" stash create)
git clone -q --no-checkout "$RT_SOURCE_DIR" "$work/src"
git -C "$work/src" checkout -q "${rev:-HEAD}"

step "build container: ${readme[0]}; ${readme[1]}"
start=$SECONDS
ct_run "$rootfs" --volatile=overlay "${apt_cache[@]}" --bind="$work/src":/src --chdir=/src -- \
  bash -euo pipefail -c "$yes; ${readme[0]}; ${readme[1]}" >"$work/build.log" 2>&1 ||
  { tail -n 60 "$work/build.log"; fail "the README's commands failed in a fresh Debian 12"; }
echo "built in $((SECONDS - start)) s"
mkdir -p "$work/pkg/build"
mv "$work"/src/build/resource-tracker_*.deb "$work"/src/build/resource-tracker-dbgsym_*.ddeb "$work/pkg/build/"
deb=$(ls "$work"/pkg/build/resource-tracker_*.deb)
rm -rf "$work/src"

step "the package"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libc6 libsystemd0 libcurl4 libjson-c5 libconfig9 libssl3 zlib1g procps; do
  [[ ", $depends," =~ ,\ $lib[\ ,] ]] || fail "Depends lacks $lib: $depends"
done
dpkg-deb -x "$deb" "$work/deb"
file "$work/deb/usr/sbin/resource-trackerd" >"$work/file.out"
grep -q ", stripped" "$work/file.out" || fail "the packaged daemon is not stripped: $(cat "$work/file.out")"
! grep -qaF -e "/src/" -e "$RT_SOURCE_DIR" "$work/deb/usr/sbin/resource-trackerd" || fail "the daemon names the build tree"

step "install container: $install"
ct_overlay "$rootfs" "$work/ct" || fail "overlay"
root=$work/ct/root
ct_run "$root" -- dpkg-query -W libconfig9 >/dev/null 2>&1 && fail "the fresh root file system has libconfig9 already"
# The stand-in of part B links the libraries of this build (ASan too).
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
standin_pkgs=$(readelf -d "$RT_TOOLS_DIR/rt_service_standin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' |
  while read -r lib; do
    { dpkg -S "/lib/$ma/$lib" "/usr/lib/$ma/$lib" 2>/dev/null || true; } | sed -n '1s/:.*//p'
  done | sort -u | tr '\n' ' ')
ct_run "$root" "${apt_cache[@]}" --bind-ro="$work/pkg":/opt/rt-pkg --chdir=/opt/rt-pkg -- \
  bash -euo pipefail -c "$yes; $install; apt-get install -qq $standin_pkgs; rm /etc/apt/apt.conf.d/90rt-test-yes" \
  >"$work/install.log" 2>&1 || { tail -n 40 "$work/install.log"; fail "$install"; }
ct_run "$root" -- dpkg-query -W libconfig9 >/dev/null 2>&1 || fail "Depends did not bring libconfig9"
cp "$RT_TOOLS_DIR/rt_service_standin" "$RT_TOOLS_DIR/rt_sdscope" "$work/"

step "boot"
ct_boot "$root" "$work" || fail "boot"

# ---------------------------------------------------------------- A
step "A: the install enabled nothing"
for u in resource-trackerd.service resource-trackerd.socket; do
  state=$(ct systemctl is-enabled "$u" || true)
  [ "$state" = disabled ] || fail "$u is '$state' after install"
  ! ct systemctl is-active -q "$u" || fail "$u was started by the install"
done
ct getent group resource-tracker >/dev/null || fail "no resource-tracker group"
unit=$(ct systemctl show -p FragmentPath --value resource-trackerd.service)
confdir=$(ct sed -n 's|^LoadCredential=sentinel-token:\(.*\)/sentinel-token$|\1|p' "$unit")
conf="$confdir/resource-trackerd.conf"
ct test -f "$conf" || fail "$conf not installed"
ct systemd-analyze verify --man=no "$unit" >"$work/verify.out" 2>&1 || fail "verify: $(cat "$work/verify.out")"
[ ! -s "$work/verify.out" ] || fail "verify in the container: $(cat "$work/verify.out")"
sock=/proc/$CT_PID1/root/run/resource-tracker/com.sparecores.ResourceTracker
rtsock() { /usr/bin/python3 -B "$here/rtsock.py" "$sock" "$1"; }

# ---------------------------------------------------------------- B
step "B: enable --now (stand-in daemon)"
ct mkdir -p /etc/systemd/system/resource-trackerd.service.d
# (the stand-in was built for this tree's prefix: it is told the package's file)
ct sh -c 'cat > /etc/systemd/system/resource-trackerd.service.d/10-standin.conf' <<EOF
[Service]
ExecStart=
ExecStart=/opt/rt-test/rt_service_standin $conf
Environment=ASAN_OPTIONS=detect_leaks=0
Environment=RESOURCE_TRACKERD_TEST_STALL_FILE=/run/resource-tracker/stall
EOF
ct systemctl daemon-reload
timeout 120 nsenter -t "$CT_PID1" -m -u -i -n -p -C systemctl enable --now resource-trackerd >"$work/enable.log" 2>&1 ||
  fail "enable --now: $(cat "$work/enable.log")"
[ "$(show ActiveState)/$(show SubState)" = active/running ] || fail "not active/running: $(show ActiveState)/$(show SubState)"
[ "$(show StatusText)" = "Tracking 0 jobs; upload queue 0; GPUs: none" ] || fail "StatusText: $(show StatusText)"
[ "$(ct systemctl is-enabled resource-trackerd.socket)" = enabled ] || fail "socket not enabled (Also=)"
[ "$(rtsock status)" = "interval=1.000 token=none activated=1" ] || fail "status: $(rtsock status)"
ct_wait 30 has_record MESSAGE_ID="$MSG_STARTED" || fail "no daemon-started record"
[ "$(field SOCKET_ACTIVATED MESSAGE_ID="$MSG_STARTED")" = 1 ] || fail "started record: SOCKET_ACTIVATED"

step "B: the sandbox keeps other users' /proc, host /proc and /sys, IP and netlink"
ct useradd -m -u 1500 alice
ct runuser -u alice -- sh -c 'exec sleep 300 </dev/null >/dev/null 2>&1 &'
ct_wait 30 ct pgrep -u alice -x sleep || fail "no process of alice"
pid=$(ct pgrep -u alice -x sleep)
[ "$(rtsock "probe $pid")" = "stat=ok io=ok smaps=ok fd=ok diskstats=ok netdev=ok inet=ok netlink=ok" ] ||
  fail "sandbox: $(rtsock "probe $pid")"
ct pkill -u alice -x sleep || true

step "B: job-finished record"
[ "$(rtsock 'job train')" = ok ] || fail "job request"
ct_wait 30 has_record MESSAGE_ID="$MSG_FINISHED" JOB_NAME=train || fail "journalctl MESSAGE_ID=… JOB_NAME=train finds nothing"
journal MESSAGE_ID="$MSG_FINISHED" JOB_NAME=train >"$work/finished"
for f in JOB_ID=1 JOB_OWNER_UID=0 EXIT_STATUS=0 CPU_USAGE_NSEC=1000000000 MEMORY_RSS_PEAK_BYTES=8192 MEMORY_PSS_PEAK_BYTES=4096 \
         IO_METRIC_READ_BYTES=512 IO_METRIC_WRITE_BYTES=1024 PRIORITY=6 \
         _SYSTEMD_UNIT=resource-trackerd.service SYSLOG_IDENTIFIER=resource-trackerd; do
  grep -qax "$f" "$work/finished" || fail "job-finished record lacks $f"
done

step "B: token credential"
ct sh -c "umask 077; printf 'st_secret\n' > $confdir/sentinel-token"
ct systemctl restart resource-trackerd
[ "$(rtsock status)" = "interval=1.000 token=present:9 activated=1" ] || fail "token: $(rtsock status)"
! log_has st_secret || fail "the token is in the journal"
ct rm "$confdir/sentinel-token"
ct systemctl restart resource-trackerd
[ "$(rtsock status)" = "interval=1.000 token=none activated=1" ] || fail "token gone: $(rtsock status)"

step "B: reload of a refused file fails; the daemon is not signalled"
ct cp "$conf" "$conf.orig"
ct sh -c "echo 'interval = 0;' > $conf"
refused_reload "$conf:1: interval: 0 is out of range 100ms..1h"
[ "$(records MESSAGE_ID="$MSG_REJECTED")" = 0 ] || fail "the daemon was signalled with a refused file"
[ "$(rtsock status)" = "interval=1.000 token=none activated=1" ] || fail "bad file applied: $(rtsock status)"
step "B: a SIGHUP past the check (a file edited after it): refused and logged"
ct systemctl kill -s HUP --kill-who=main resource-trackerd
ct_wait 30 has_record MESSAGE_ID="$MSG_REJECTED" || fail "no config-rejected record"
[ "$(field CONFIG_ERROR MESSAGE_ID="$MSG_REJECTED")" = "$conf:1: interval: 0 is out of range 100ms..1h" ] ||
  fail "CONFIG_ERROR: $(field CONFIG_ERROR MESSAGE_ID="$MSG_REJECTED")"
[ "$(rtsock status)" = "interval=1.000 token=none activated=1" ] || fail "bad file applied: $(rtsock status)"
[ "$(show ActiveState)" = active ] || fail "not active after a refused reload"
step "B: reload of a good file (the interval applies at once)"
ct sh -c "echo 'interval = 2;' > $conf"
ct systemctl reload resource-trackerd || fail "reload"
ct_wait 30 has_record MESSAGE_ID="$MSG_RELOADED" || fail "no config-reloaded record"
[ "$(field CONFIG_CHANGED MESSAGE_ID="$MSG_RELOADED")" = interval ] || fail "CONFIG_CHANGED"
[ "$(field CONFIG_RESTART_NEEDED MESSAGE_ID="$MSG_RELOADED")" = nothing ] || fail "CONFIG_RESTART_NEEDED"
[ "$(rtsock status)" = "interval=2.000 token=none activated=1" ] || fail "interval not applied: $(rtsock status)"

step "B: socket activation after a stop"
ct systemctl stop resource-trackerd.service 2>/dev/null
ct_wait 30 has_record MESSAGE_ID="$MSG_STOPPED" || fail "no daemon-stopped record"
[ "$(show ActiveState)" = inactive ] || fail "service still $(show ActiveState)"
ct systemctl is-active -q resource-trackerd.socket || fail "socket stopped with the service"
ct test -S /run/resource-tracker/com.sparecores.ResourceTracker || fail "socket file gone after the stop"
starts=$(records MESSAGE_ID="$MSG_STARTED")
[ "$(rtsock status)" = "interval=2.000 token=none activated=1" ] || fail "activation: $(rtsock status)"
wait_active resource-trackerd.service || fail "not active after a connection"
[ "$(records MESSAGE_ID="$MSG_STARTED")" -gt "$starts" ] || fail "not started again"

step "B: watchdog kills a stalled sampler, systemd restarts it"
watchdog_restart

step "B: a bad file at start exits 78 without a restart loop"
ct sh -c "echo 'bogus = 1;' > $conf"
ct systemctl restart resource-trackerd 2>/dev/null && fail "started with a bad file"
sleep 5 # RestartSec=2: a restart would have happened by now
[ "$(show ExecMainStatus)" = 78 ] || fail "exit status $(show ExecMainStatus), not 78"
# (a manual restart resets NRestarts to 0)
[ "$(show ActiveState)/$(show NRestarts)" = failed/0 ] || fail "restarted after exit 78: $(show ActiveState)/$(show NRestarts)"
log_has "$conf:1: unknown key 'bogus'" || fail "no message for the bad file"
ct mv "$conf.orig" "$conf"
ct rm -f /etc/systemd/system/resource-trackerd.service.d/20-watchdog.conf
ct systemctl reset-failed resource-trackerd
ct systemctl start resource-trackerd || fail "start with the file restored"

# ---------------------------------------------------------------- C
step "C: the real daemon and resource-trackerctl"
source "$here/scenarios-daemon.sh"

# ---------------------------------------------------------------- D
step "D: the Prometheus exporter"
source "$here/scenarios-metrics.sh"

# ---------------------------------------------------------------- E
step "E: transient scopes"
source "$here/scenarios-cgroup.sh"

# ---------------------------------------------------------------- F
step "F: cgroup jobs under systemd"
source "$here/scenarios-jobs.sh"
echo ok
