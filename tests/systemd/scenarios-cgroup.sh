# Part E of test_container.sh (sourced there): transient scopes through
# sd-bus (daemon/system/sdunit.h, driven by tests/tools/rt_sdscope) with
# systemd 252 as PID 1: a scope for a held command under a user's slice, a
# double-forked child staying in it, a unit's ControlGroup, the scope gone
# once its processes are; the same on alice's own manager.

sdscope() { ct timeout 60 /opt/rt-test/rt_sdscope "$@"; }
# in_cgroup PID CGROUP: PID's v2 (or name=systemd) line names CGROUP
in_cgroup() { local out; out=$(ct cat "/proc/$1/cgroup"); grep -qE "^(0:|[0-9]+:name=systemd:)$2\$" <<<"$out"; }
cgroup_dirs() { ct sh -c "ls -d /sys/fs/cgroup$1 /sys/fs/cgroup/unified$1 /sys/fs/cgroup/systemd$1 2>/dev/null || true"; }
no_cgroup_dirs() { [ -z "$(cgroup_dirs "$1")" ]; }
unit_gone() { [ "$(ct systemctl show -p LoadState --value "$1")" = not-found ]; }

step "E: a transient scope under alice's slice holds a command and what it double-forks"
out=$(sdscope start rt-test-1.scope user-1500.slice sh -c '(sleep 301 &); exec sleep 302') ||
  fail "rt_sdscope start: $out"
pid=$(sed -n 's/^pid=\([0-9]*\) .*/\1/p' <<<"$out")
cg=$(sed -n 's/.* cgroup=\([^ ]*\) .*/\1/p' <<<"$out")
[ "$cg" = /user.slice/user-1500.slice/rt-test-1.scope ] || fail "the scope's cgroup: $out"
grep -q ' member=yes$' <<<"$out" || fail "the cgroup layer does not list $pid in $cg: $out"
[ "$(ct systemctl show -p ActiveState --value rt-test-1.scope)" = active ] || fail "rt-test-1.scope is not active"
[ "$(ct systemctl show -p Slice --value rt-test-1.scope)" = user-1500.slice ] || fail "not under user-1500.slice"
[ "$(ct systemctl show -p CollectMode --value rt-test-1.scope)" = inactive-or-failed ] || fail "CollectMode"
for p in MemoryAccounting TasksAccounting IOAccounting; do
  [ "$(ct systemctl show -p $p --value rt-test-1.scope)" = yes ] || fail "$p is not on"
done
[ "$(sdscope cgroup rt-test-1.scope)" = "$cg" ] || fail "the unit's ControlGroup: $(sdscope cgroup rt-test-1.scope)"
ct_wait 30 ct pgrep -x -f 'sleep 301' || fail "no double-forked child"
orphan=$(ct pgrep -x -f 'sleep 301')
[ "$(ct ps -o ppid= -p "$orphan" | tr -d ' ')" = 1 ] || fail "the child was not re-parented to PID 1"
in_cgroup "$pid" "$cg" || fail "the command is not in $cg: $(ct cat /proc/$pid/cgroup)"
in_cgroup "$orphan" "$cg" || fail "the double-forked child left $cg: $(ct cat /proc/$orphan/cgroup)"
[ -n "$(cgroup_dirs "$cg")" ] || fail "no directory of $cg"

step "E: names taken, units missing or without a cgroup, a unit's cgroup"
rc=0; out=$(sdscope start rt-test-1.scope user-1500.slice true 2>&1) || rc=$?
[ $rc -eq 1 ] && grep -q "File exists" <<<"$out" || fail "a second rt-test-1.scope: exit $rc: $out"
rc=0; out=$(sdscope cgroup no-such-unit.service 2>&1) || rc=$?
[ $rc -eq 1 ] && grep -q "No such file or directory" <<<"$out" || fail "a missing unit: exit $rc: $out"
out=$(sdscope cgroup systemd-journald.service 2>&1) || fail "systemd-journald.service: $out"
[ "$out" = /system.slice/systemd-journald.service ] || fail "systemd-journald.service: $out"

step "E: the scope is gone once its processes are"
ct kill "$pid" "$orphan"
ct_wait 30 unit_gone rt-test-1.scope || fail "rt-test-1.scope stays: $(ct systemctl status --no-pager rt-test-1.scope 2>&1)"
ct_wait 30 no_cgroup_dirs "$cg" || fail "the scope's cgroup stays: $(cgroup_dirs "$cg")"

step "E: a scope on alice's own manager"
# (the minimal tree has no pam_systemd, which gives a user's manager its
# XDG_RUNTIME_DIR: a drop-in does)
ct mkdir -p /etc/systemd/system/user@.service.d
ct sh -c 'printf "[Service]\nEnvironment=XDG_RUNTIME_DIR=/run/user/%%i\n" > /etc/systemd/system/user@.service.d/90-rt-test.conf'
ct systemctl daemon-reload
ct systemctl start user@1500.service || fail "alice's manager: $(ct systemctl status --no-pager user@1500.service 2>&1)"
ct_wait 60 ct test -S /run/user/1500/systemd/private || fail "alice's manager has no private socket"
alice_sd() { ct timeout 60 runuser -u alice -- env XDG_RUNTIME_DIR=/run/user/1500 /opt/rt-test/rt_sdscope --user "$@"; }
alice_scope_gone() {
  ! ct runuser -u alice -- env XDG_RUNTIME_DIR=/run/user/1500 systemctl --user is-active -q rt-user-1.scope
}
out=$(alice_sd start rt-user-1.scope "" sleep 303) || fail "rt_sdscope --user start: $out"
pid=$(sed -n 's/^pid=\([0-9]*\) .*/\1/p' <<<"$out")
cg=$(sed -n 's/.* cgroup=\([^ ]*\) .*/\1/p' <<<"$out")
[[ $cg == /user.slice/user-1500.slice/user@1500.service/*rt-user-1.scope ]] || fail "alice's scope: $out"
in_cgroup "$pid" "$cg" || fail "$pid is not in $cg: $(ct cat /proc/$pid/cgroup)"
ct kill "$pid"
ct_wait 30 alice_scope_gone || fail "alice's scope stays"
ct systemctl stop user@1500.service
ct rm -r /etc/systemd/system/user@.service.d
ct systemctl daemon-reload
