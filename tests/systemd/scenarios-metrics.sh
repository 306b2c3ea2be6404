# Part D of test_container.sh (sourced there, after part C): the Prometheus
# exporter as the package ships it (docs/metrics.md). A scrape through
# resource-tracker-exporter.socket runs an unprivileged
# resource-trackerctl metrics --http per connection: the host only by
# default, every job with JOBS=all, the admin group and a bearer token (to a
# scrape that sends it), a failed scrape with JOBS=all without either;
# resource-tracker-textfile.service keeps its .prom file.

ct systemctl start resource-trackerd.socket
ct systemctl enable --now resource-tracker-exporter.socket 2>/dev/null || fail "enable the exporter socket"
ct systemctl is-active -q resource-tracker-exporter.socket || fail "the exporter socket is not listening"

# One HTTP exchange from inside the container (its loopback); $1: a header line.
scrape() {
  ct timeout 60 bash -c 'exec 3<>/dev/tcp/127.0.0.1/10120 && printf "GET /metrics HTTP/1.0\r\nHost: x\r\n$1\r\n" >&3 && cat <&3' _ "${1:+$1\\r\\n}"
}
token=s3cret-scrape-token-0123456789
exporter_log() { ct journalctl --no-pager -o cat -u 'resource-tracker-exporter@*'; }
refused() { local out; out=$(exporter_log); grep -q "is not an administrator" <<<"$out"; }
alicelive_runs() { local out; out=$(ct timeout 10 resource-trackerctl jobs --running); grep -qw alicelive <<<"$out"; }

step "D: a job runs while Prometheus scrapes"
ct sh -c 'runuser -u alice -- resource-trackerctl run --quiet --job-name alicelive -- sleep 300 </dev/null >/dev/null 2>&1 &'
ct_wait 60 alicelive_runs || fail "alicelive does not run"
live_id=$(ct resource-trackerctl jobs --running | awk '$2 == "alicelive" { print $1 }')

step "D: the host only by default"
out=$(scrape) || fail "scrape: exit $?"
head -n1 <<<"$out" | grep -q '^HTTP/1.1 200 OK' || fail "scrape answered: $(head -n 5 <<<"$out")"
grep -q '^resource_tracker_host_cpu_busy_cores ' <<<"$out" || fail "no host CPU series"
# CPU time counters, which the unit (ProcSubset=pid) could not read itself.
grep -q '^resource_tracker_host_cpu_seconds_total{cpu="0",mode="idle"} [1-9]' <<<"$out" || fail "no CPU time counters"
grep -q '^resource_tracker_host_memory_total_bytes [1-9]' <<<"$out" || fail "no host memory"
! grep -q '^resource_tracker_job_' <<<"$out" || fail "a default exporter published jobs"

step "D: JOBS=all without a bearer token fails the scrape"
ct mkdir -p /etc/systemd/system/resource-tracker-exporter@.service.d
printf '[Service]\nEnvironment=JOBS=all\nSupplementaryGroups=resource-tracker\n' |
  ct sh -c 'cat > /etc/systemd/system/resource-tracker-exporter@.service.d/20-jobs.conf'
ct systemctl daemon-reload
out=$(scrape) || true
head -n1 <<<"$out" | grep -q '^HTTP/1.1 500 ' || fail "JOBS=all without a token answered: $(head -n 1 <<<"$out")"
! grep -q '^resource_tracker_job_' <<<"$out" || fail "published jobs without a token"
ct sh -c "umask 077 && mkdir -p /etc/resource-tracker && echo $token > /etc/resource-tracker/scrape-token"
tokened='LoadCredential=scrape-token:/etc/resource-tracker/scrape-token\nEnvironment=TOKEN_FILE=%%d/scrape-token\n'

step "D: JOBS=all without the admin group fails the scrape"
printf "[Service]\nEnvironment=JOBS=all\n$tokened" |
  ct sh -c 'cat > /etc/systemd/system/resource-tracker-exporter@.service.d/20-jobs.conf'
ct systemctl daemon-reload
out=$(scrape "Authorization: Bearer $token") || true
head -n1 <<<"$out" | grep -q '^HTTP/1.1 500 ' || fail "JOBS=all alone answered: $(head -n 1 <<<"$out")"
ct_wait 30 refused || fail "the refusal is not in the journal"
# It ran as a throw-away user (DynamicUser=: uids 61184-65519), not as root.
uid=$(exporter_log | sed -n 's/.*--jobs all: uid \([0-9]*\) is not an administrator.*/\1/p' | head -n 1)
[ -n "$uid" ] && [ "$uid" -ge 61184 ] && [ "$uid" -le 65519 ] || fail "the scrape ran as uid '$uid'"

step "D: JOBS=all with the admin group publishes every job, to the token's holder only"
printf "[Service]\nEnvironment=JOBS=all\nSupplementaryGroups=resource-tracker\n$tokened" |
  ct sh -c 'cat > /etc/systemd/system/resource-tracker-exporter@.service.d/20-jobs.conf'
ct systemctl daemon-reload
for bad in "" "Authorization: Bearer wrong"; do
  out=$(scrape "$bad") || true
  head -n1 <<<"$out" | grep -q '^HTTP/1.1 401 ' || fail "a scrape with '$bad' answered: $(head -n 1 <<<"$out")"
  ! grep -q '^resource_tracker_' <<<"$out" || fail "published to a scrape with '$bad'"
done
out=$(scrape "Authorization: Bearer $token") || fail "scrape: exit $?"
head -n1 <<<"$out" | grep -q '^HTTP/1.1 200 OK' || fail "scrape answered: $(head -n 1 <<<"$out")"
grep -q "^resource_tracker_job_cpu_seconds_total{job_id=\"$live_id\",job_name=\"alicelive\",user=\"alice\"} " <<<"$out" ||
  fail "alicelive's CPU series: $(grep '^resource_tracker_job_cpu' <<<"$out")"
grep -q "^resource_tracker_job_running{job_id=\"$live_id\",job_name=\"alicelive\",user=\"alice\"} 1$" <<<"$out" ||
  fail "alicelive is not running in the metrics"
ct rm /etc/systemd/system/resource-tracker-exporter@.service.d/20-jobs.conf

step "D: the textfile mode"
ct mkdir -p /etc/systemd/system/resource-tracker-textfile.service.d
printf '[Service]\nEnvironment=INTERVAL=1\n' |
  ct sh -c 'cat > /etc/systemd/system/resource-tracker-textfile.service.d/20-interval.conf'
ct systemctl daemon-reload
ct systemctl start resource-tracker-textfile.service || fail "start the textfile service"
prom=/run/resource-tracker-metrics/resource-tracker.prom
ct_wait 60 ct test -s "$prom" || fail "no $prom"
ct grep -q '^resource_tracker_host_cpu_busy_cores ' "$prom" || fail "$prom has no host CPU series"
[ "$(ct stat -c %a "$prom")" = 644 ] || fail "$prom mode $(ct stat -c %a "$prom")"
[ "$(ct stat -c %u "$prom")" != 0 ] || fail "$prom written by root"
ct systemctl stop resource-tracker-textfile.service
! ct test -e "$prom" || fail "$prom stays after the service stopped"

ct pkill -u alice -x sleep || true
ct systemctl disable --now resource-tracker-exporter.socket 2>/dev/null
ct systemctl stop resource-trackerd.service resource-trackerd.socket
