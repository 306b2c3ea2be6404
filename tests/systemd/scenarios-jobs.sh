# Part F of test_container.sh (sourced there): cgroup jobs with systemd as
# PID 1 and the real daemon (docs/jobs.md, "Cgroup jobs"): run from a login
# session's scope gets a transient scope of its own in the user's slice, a
# double-forked worker is counted, the scope goes with the job; start --unit
# tracks a service's cgroup (root only); run from a service stays a process
# tree and says why.

ct systemctl start resource-trackerd.socket resource-trackerd.service || fail "start the daemon again"
ctl() { ct timeout 120 resource-trackerctl "$@"; }
ct_wait 60 ct timeout 5 resource-trackerctl info || fail "the daemon does not answer"
# job FIELD NAME [USER]: a field of the job's JSON (status --json), as Python prints it
job() {
  local who=(); [ -n "${3:-}" ] && who=(runuser -u "$3" --)
  ct "${who[@]}" resource-trackerctl status "$2" --json |
    python3 -c 'import json, sys; j = json.load(sys.stdin); j = j.get("job", j)
for k in sys.argv[1].split("."): j = j[k] if j is not None else None
print(j)' "$1"
}
# CPU for a second of its own (utime + stime in clock ticks from /proc/self/stat), in dash and awk
burn='awk "BEGIN { do { getline l < \"/proc/self/stat\"; close(\"/proc/self/stat\"); split(l, f, \" \") } while (f[14] + f[15] < 100) }"'

step "F: run in a login session gets a scope of its own; its double-forked worker counts"
# The session: a scope in alice's slice, as pam_systemd makes session-N.scope.
ct systemd-run -q --scope --unit=rt-session-1 --slice=user-1500.slice \
  runuser -u alice -- resource-trackerctl run --quiet --job-name scoped -- \
  sh -c "(sh -c '$burn; touch /tmp/rt-worker-done' &); while [ ! -e /tmp/rt-worker-done ]; do sleep 0.1; done" ||
  fail "run in a session scope: exit $?"
[ "$(job tracking.kind scoped alice)" = cgroup ] || fail "not a cgroup job: $(job tracking scoped alice)"
cg=$(job tracking.cgroup scoped alice)
id=$(job id scoped alice)
[ "$cg" = "/user.slice/user-1500.slice/resource-tracker-job-$id.scope" ] || fail "the job's cgroup: $cg"
cpu=$(job summary.cpu_secs scoped alice)
python3 -c "import sys; sys.exit(not 0.9 <= $cpu <= 1.5)" || fail "the worker's second of CPU: the job counted $cpu s"
ct_wait 30 unit_gone "resource-tracker-job-$id.scope" || fail "the job's scope stays"
ct rm -f /tmp/rt-worker-done

step "F: start --unit tracks a service's cgroup; a user may not"
ct systemd-run -q --unit=rt-svc.service sh -c "sleep 1; $burn; sleep 1" || fail "start rt-svc.service"
rc=0; out=$(ct runuser -u alice -- resource-trackerctl start --unit rt-svc.service 2>&1) || rc=$?
[ $rc -eq 4 ] || fail "alice tracking a system service: exit $rc: $out"
id=$(ctl start --unit rt-svc.service --name svc) || fail "start --unit as root: exit $?"
[ "$(job tracking.cgroup svc)" = /system.slice/rt-svc.service ] || fail "the unit's cgroup: $(job tracking svc)"
svc_ended() { [ "$(job state svc)" = ended ]; }
ct_wait 30 svc_ended || fail "the job did not end with its service: $(job state svc)"
cpu=$(job summary.cpu_secs svc)
python3 -c "import sys; sys.exit(not 0.9 <= $cpu <= 1.5)" || fail "the service's second of CPU: the job counted $cpu s"
rc=0; out=$(ctl start --unit no-such-unit.service 2>&1) || rc=$?
[ $rc -eq 5 ] && grep -q "no such unit" <<<"$out" || fail "a missing unit: exit $rc: $out"

step "F: run from a service stays a process tree and says why"
ct systemd-run -q --wait --unit=rt-runner.service resource-trackerctl run --quiet --job-name fromsvc -- true ||
  fail "run from a service: exit $?"
[ "$(job tracking.kind fromsvc)" = process-tree ] || fail "run from a service: $(job tracking fromsvc)"
job tracking.why fromsvc | grep -q "rt-runner.service" || fail "why: $(job tracking.why fromsvc)"
