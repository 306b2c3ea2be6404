# Part C of test_container.sh (sourced there): the real resource-trackerd
# of the package, enabled by the README's command, under the shipped unit,
# driven by resource-trackerctl as root and as an unprivileged user, against
# the documented CLI (resource-trackerctl(1)). Every check runs: the unit
# stays Type=notify on the socket unit's socket, so a daemon without READY=1,
# STATUS=, journal records, socket activation or the watchdog fails here.

ct systemctl disable -q --now resource-trackerd.service resource-trackerd.socket
ct rm -f /etc/systemd/system/resource-trackerd.service.d/10-standin.conf
ct sh -c 'printf "[Service]\nEnvironment=RESOURCE_TRACKERD_TEST_STALL_FILE=/run/resource-tracker/stall\n" \
  > /etc/systemd/system/resource-trackerd.service.d/10-test.conf'
ct systemctl daemon-reload
starts=$(records MESSAGE_ID="$MSG_STARTED")
step "C: ${readme[2]}"
ct ${readme[2]} >"$work/enable.log" 2>&1 || fail "${readme[2]}: $(cat "$work/enable.log")"
[ "$(ct systemctl is-enabled resource-trackerd.service)" = enabled ] || fail "the service is not enabled"
# (timeout: a daemon that does not take the socket unit's fd leaves a socket nobody accepts on)
ctl() { ct timeout 120 resource-trackerctl "$@"; }
alice() { ct timeout 120 runuser -u alice -- resource-trackerctl "$@"; }
ct_wait 60 ct timeout 5 resource-trackerctl info || fail "the daemon does not answer"
[ "$(show ActiveState)/$(show SubState)" = active/running ] || fail "not active/running"
[ "$(show Type)" = notify ] || fail "the real daemon runs as Type=$(show Type), not notify"
ct_wait 30 ct sh -c 'systemctl show -p StatusText --value resource-trackerd | grep -q "^Tracking "' ||
  fail "StatusText: '$(show StatusText)'"
ct_wait 30 ct sh -c "[ \$(journalctl -o export MESSAGE_ID=$MSG_STARTED | grep -ac '^MESSAGE=') -gt $starts ]" ||
  fail "no daemon-started record from the real daemon"
# The package's binaries name their sources relative to the tree.
code_file=$(field CODE_FILE MESSAGE_ID="$MSG_STARTED")
[[ $code_file == daemon/* ]] || fail "CODE_FILE of the daemon-started record: '$code_file'"

step "C: run, jobs, status as root and as a user"
ctl run --quiet --job-name rootjob -- sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' ||
  fail "run as root: exit $?"
rc=0; ctl run --quiet --job-name failjob -- sh -c 'exit 3' || rc=$?
[ $rc -eq 3 ] || fail "run did not pass on exit status 3 (got $rc)"
alice run --quiet --job-name alicejob -- sh -c 'head -c 8388608 /dev/zero > $HOME/blob; sync; rm $HOME/blob' ||
  fail "run as alice: exit $?"
# Served by the system daemon, not by a private one the ctl started.
# (pgrep -x would compare the 15-character comm "resource-tracke")
[ "$(ct pgrep -f 'sbin/resource-trackerd( |$)')" = "$(show MainPID)" ] ||
  fail "not only the service's daemon runs: $(ct pgrep -af resource-trackerd)"
out=$(ctl jobs) || fail "jobs as root"
grep -qw rootjob <<<"$out" && grep -qw alicejob <<<"$out" || fail "root does not see every job: $out"
out=$(alice jobs) || fail "jobs as alice"
grep -qw alicejob <<<"$out" || fail "alice does not see her job: $out"
! grep -qw rootjob <<<"$out" || fail "alice sees root's job: $out"
alice status alicejob >/dev/null || fail "status of her own job"
rc=0; alice status rootjob >/dev/null 2>&1 || rc=$?
[ $rc -eq 4 ] || [ $rc -eq 5 ] || fail "alice reading root's job: exit $rc, not 4 or 5"
alice status >/dev/null || fail "host status as alice"
ctl status rootjob >/dev/null || fail "status as root"

step "C: job-finished records"
ct_wait 30 has_record MESSAGE_ID="$MSG_FINISHED" JOB_NAME=alicejob || fail "no job-finished record for alicejob"
journal MESSAGE_ID="$MSG_FINISHED" JOB_NAME=alicejob >"$work/alice-finished"
for f in JOB_OWNER_UID=1500 EXIT_STATUS=0 _SYSTEMD_UNIT=resource-trackerd.service; do
  grep -qax "$f" "$work/alice-finished" || fail "alicejob record lacks $f"
done
for f in JOB_ID CPU_USAGE_NSEC MEMORY_RSS_PEAK_BYTES MEMORY_PSS_PEAK_BYTES IO_METRIC_READ_BYTES IO_METRIC_WRITE_BYTES JOB_DURATION_USEC; do
  grep -qa "^$f=[0-9a-zA-Z-]" "$work/alice-finished" || fail "alicejob record lacks $f"
done
[ "$(field EXIT_STATUS MESSAGE_ID="$MSG_FINISHED" JOB_NAME=failjob)" = 3 ] || fail "failjob EXIT_STATUS"
cpu=$(field CPU_USAGE_NSEC MESSAGE_ID="$MSG_FINISHED" JOB_NAME=rootjob)
[ "${cpu:-0}" -gt 0 ] || fail "rootjob used no CPU: '$cpu'"

step "C: socket activation starts the real daemon"
ct systemctl stop resource-trackerd.service 2>/dev/null
[ "$(show ActiveState)" = inactive ] || fail "still $(show ActiveState)"
out=$(ctl jobs) || fail "jobs through socket activation"
grep -qw rootjob <<<"$out" || fail "finished jobs did not survive the restart: $out"
wait_active resource-trackerd.service || fail "not active after a connection"

step "C: the watchdog restarts a stalled sampler"
watchdog_restart
ct rm -f /etc/systemd/system/resource-trackerd.service.d/20-watchdog.conf
ct systemctl daemon-reload

step "C: a refused file fails the reload; the daemon keeps its configuration"
ct cp "$conf" "$conf.orig"
ct sh -c "echo 'limits: { max_connections = 0; };' > $conf"
refused_reload "$conf:1: limits.max_connections: 0 is out of range 1..65536"
ctl jobs >/dev/null || fail "no answer after a refused reload"
ct mv "$conf.orig" "$conf"
ct systemctl reload resource-trackerd || fail "reload"

step "C: a drop-in overrides the main file"
dropins=$conf.d
ct cp "$conf" "$conf.orig"
ct sh -c "echo 'interval = \"2s\";' > $conf"
ct mkdir -p "$dropins"
ct sh -c "printf 'interval = \"500ms\";\\n' > $dropins/50-test.conf"
ct systemctl restart resource-trackerd || fail "restart with a drop-in"
ct_wait 30 ct sh -c "resource-trackerctl info --json | grep -q '\"interval_secs\":0.5,'" ||
  fail "the drop-in's interval is not in effect: $(ctl info --json)"
# … on reload too, and a bad drop-in fails the reload naming itself.
ct sh -c "printf 'limits: { max_jobs_per_user = 3; };\\n' > $dropins/60-test.conf"
ct systemctl reload resource-trackerd || fail "reload with a new drop-in"
ct_wait 30 ct sh -c "journalctl -o export MESSAGE_ID=$MSG_RELOADED CONFIG_CHANGED=limits.max_jobs_per_user | grep -q ^MESSAGE=" ||
  fail "the reload did not apply the new drop-in"
ct sh -c "printf '# site\\nlimits: { max_jobs_per_user = 0; };\\n' > $dropins/70-test.conf"
refused_reload "$dropins/70-test.conf:2: limits.max_jobs_per_user: 0 is out of range 1..100000"
ct rm -rf "$dropins"
ct mv "$conf.orig" "$conf"
ct systemctl stop resource-trackerd.service resource-trackerd.socket
