"""resource-trackerctl metrics against a real daemon, a real exporter socket
and a real Prometheus (Debian's, started here on loopback): the exposition
text passes promtool; Prometheus scrapes the socket-activated exporter
(systemd-socket-activate --accept --inetd, as the .socket unit does) and its
HTTP API returns the host CPU series and a running job's CPU series with the
job's labels; which jobs are published; ended jobs leave; the textfile mode."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import (CTL, SANITIZER_MARKS, Daemon, DaemonTest, HandCgroup, TestUsers, run_ctl, setpriv,  # noqa: E402
                   spawn_as, wait_for)

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
SOCKET_ACTIVATE = shutil.which("systemd-socket-activate")
PASS_ENV = ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse(text):
    """{(name, frozenset(labels)): value} of an exposition text (labels
    without escapes: the test's values have none)."""
    out = {}
    for ln in text.splitlines():
        if not ln or ln.startswith("#"):
            continue
        head, value = ln.rsplit(" ", 1)
        name, labels = head, frozenset()
        if "{" in head:
            name, rest = head.split("{", 1)
            labels = frozenset(tuple(kv.split("=", 1)) for kv in rest.rstrip("}").split(","))
            labels = frozenset((k, v.strip('"')) for k, v in labels)
        out[(name, labels)] = float(value)
    return out


def series(parsed, name):
    return {labels: v for (n, labels), v in parsed.items() if n == name}


def http(port, request):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(request)
        data = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(ln.split(": ", 1) for ln in lines[1:])
    return int(lines[0].split()[1]), headers, body.decode()


def http_as(user, port, request):
    """http() from a process of another user."""
    script = "import socket,sys\ns=socket.create_connection(('127.0.0.1',int(sys.argv[1])),timeout=30)\n" \
             "s.sendall(sys.argv[2].encode())\nd=b''\nwhile True:\n c=s.recv(65536)\n if not c: break\n d+=c\n" \
             "sys.stdout.buffer.write(d)\n"
    out = subprocess.run(setpriv(user) + ["/usr/bin/python3", "-c", script, str(port), request],
                         capture_output=True, timeout=60, check=True).stdout
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    return int(lines[0].split()[1]), dict(ln.split(": ", 1) for ln in lines[1:]), body.decode()


def proc_stat():
    """{"cpu": [seconds by mode], "cpuN": ...} of /proc/stat."""
    tick = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat") as f:
        return {w[0]: [int(x) / tick for x in w[1:9]] for w in (ln.split() for ln in f) if w[0].startswith("cpu")}


def documented():
    """{family: (type, {labels})} of docs/metrics.md's table."""
    with open(os.path.join(os.environ["RT_SOURCE_DIR"], "docs", "metrics.md")) as f:
        rows = [ln.split("|")[1:5] for ln in f if ln.startswith("| `resource_tracker_")]
    return {r[0].strip(" `"): (r[1].strip(), {l.strip(" `") for l in r[2].split(",") if l.strip()}) for r in rows}


class Metrics(DaemonTest):
    interval = 0.2

    def busy_job(self, name, user=None, *options):
        """A job that burns CPU until the test ends."""
        cmd = ["sh", "-c", "while :; do :; done"]
        p = spawn_as(user, cmd) if user else subprocess.Popen(cmd)
        self.addCleanup(lambda: (p.kill(), p.wait()))
        rc, out, err = run_ctl(self.d, "start", "--pid", str(p.pid), "--name", name, *options, user=user)
        self.assertEqual(rc, 0, err)
        jid = int(out)
        wait_for(lambda: self.d.call("GetJob", {"id": jid})["job"]["summary"]["samples"] >= 3, what="samples")
        return p, jid

    def metrics(self, *args, user=None, check=0):
        return run_ctl(self.d, "metrics", *args, user=user, check=check)[1]

    def promtool(self, text):
        if not PROMTOOL:
            self.skipTest("no promtool (scripts/setup.d/60-prometheus-tmux.sh)")
        p = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(), capture_output=True)
        self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())

    def exporter(self, *args):
        """The exporter as systemd runs it: a listening socket, and a
        resource-trackerctl metrics --http per connection on stdin/stdout."""
        if not SOCKET_ACTIVATE:
            self.skipTest("no systemd-socket-activate")
        port = free_port()
        env = ["-E", "RESOURCE_TRACKER_SOCKET=" + self.d.socket] + \
            sum((["-E", k] for k in PASS_ENV if k in os.environ), [])
        log = tempfile.TemporaryFile()
        p = subprocess.Popen([SOCKET_ACTIVATE, "--accept", "--inetd", "-l", "127.0.0.1:%d" % port] + env +
                             [CTL, "metrics", "--http"] + list(args), stdout=log, stderr=log)

        def stop():
            p.terminate()
            p.wait()
            log.seek(0)
            out = log.read().decode(errors="replace")
            log.close()
            for mark in SANITIZER_MARKS:
                self.assertNotIn(mark, out)
        self.addCleanup(stop)
        wait_for(lambda: subprocess.run(["ss", "-Hltn", "sport = :%d" % port], capture_output=True).stdout,
                 what="the exporter's socket")
        return port

    def test_exposition_passes_promtool_and_has_the_figures(self):
        p, jid = self.busy_job("expo", None, "--request", "cpus=4,mem=2G")
        text = self.metrics()
        self.promtool(text)
        m = parse(text)
        # Every family has its HELP and TYPE, once.
        for n in {n for n, _ in m}:
            self.assertEqual(text.count("# TYPE %s " % n), 1, n)
            self.assertEqual(text.count("# HELP %s " % n), 1, n)
        host = self.d.call("GetHostSample")["sample"]
        ncpu = len(host["cpu"]["per_core_pct"])
        self.assertEqual(m[("resource_tracker_host_cpus", frozenset())], ncpu)
        self.assertLessEqual(m[("resource_tracker_host_cpu_busy_cores", frozenset())], ncpu)
        self.assertEqual(len(series(m, "resource_tracker_host_cpu_core_busy_ratio")), ncpu)
        # CPU time as node_exporter counts it: read at the scrape, so between
        # two reads of /proc/stat around it.
        modes = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]
        before, text, after = proc_stat(), self.metrics(), proc_stat()
        m = parse(text)
        self.assertEqual({dict(l)["mode"] for l in series(m, "resource_tracker_host_cpu_time_seconds_total")},
                         set(modes))
        self.assertEqual(len(series(m, "resource_tracker_host_cpu_seconds_total")), len(modes) * ncpu)
        for cpu in ["cpu"] + ["cpu%d" % i for i in range(ncpu)]:
            for i, mode in enumerate(modes):
                if cpu == "cpu":
                    got = m[("resource_tracker_host_cpu_time_seconds_total", frozenset({("mode", mode)}))]
                else:
                    got = m[("resource_tracker_host_cpu_seconds_total", frozenset({("cpu", cpu[3:]), ("mode", mode)}))]
                if mode != "iowait":  # the kernel's iowait may go backwards
                    self.assertTrue(before[cpu][i] - 1e-6 <= got <= after[cpu][i] + 1e-6, (cpu, mode, got))
        self.assertEqual(m[("resource_tracker_host_memory_total_bytes", frozenset())],
                         host["memory"]["total_mib"] * 1048576)
        for d in host["disk"]:
            self.assertIn(frozenset({("device", d["device"])}), series(m, "resource_tracker_host_disk_read_bytes_total"))
        for n in host["network"]:
            self.assertIn(frozenset({("interface", n["interface"])}),
                          series(m, "resource_tracker_host_network_receive_bytes_total"))
        labels = frozenset({("job_id", str(jid)), ("job_name", "expo"), ("user", "root")})
        self.assertEqual(m[("resource_tracker_job_running", labels)], 1)
        self.assertGreater(m[("resource_tracker_job_cpu_seconds_total", labels)], 0)
        job = self.d.call("GetJob", {"id": jid})["job"]
        self.assertAlmostEqual(m[("resource_tracker_job_start_time_seconds", labels)], job["started_at"], places=2)
        # The running job's latest figures: a busy loop keeps a CPU busy (as
        # much as others on this machine leave it: not a fixed share).
        self.assertGreater(m[("resource_tracker_job_cpu_busy_cores", labels)], 0)
        self.assertLessEqual(m[("resource_tracker_job_cpu_busy_cores", labels)], ncpu)
        self.assertEqual(m[("resource_tracker_job_processes", labels)], 1)
        self.assertGreater(m[("resource_tracker_job_memory_rss_bytes", labels)], 0)
        self.assertGreater(m[("resource_tracker_job_memory_pss_bytes", labels)], 0)
        # What it asked for, and its use against that (a ratio, the API's percent / 100).
        self.assertEqual(m[("resource_tracker_job_request_cpus", labels)], 4)
        self.assertEqual(m[("resource_tracker_job_request_memory_bytes", labels)], 2 << 30)
        eff = self.d.call("GetJob", {"id": jid})["job"]["efficiency"]
        self.assertGreater(m[("resource_tracker_job_cpu_efficiency_ratio", labels)], 0)
        self.assertLessEqual(m[("resource_tracker_job_cpu_efficiency_ratio", labels)], 0.5)  # at most 2 of 4 CPUs
        self.assertAlmostEqual(m[("resource_tracker_job_memory_efficiency_ratio", labels)], eff["memory_pct"] / 100,
                               places=2)
        self.assertIn(("resource_tracker_job_notes", labels), m)

    def test_the_documented_set_is_the_published_set(self):
        """docs/metrics.md is the interface: every family published is documented with its
        type and labels, and every documented family is one the exporter knows."""
        doc = documented()
        self.busy_job("doc", None, "--request", "cpus=1,mem=1G,gpus=1")
        p = subprocess.Popen(["cat"], stdin=subprocess.PIPE)  # ends when told, after its start
        jid = int(run_ctl(self.d, "start", "--pid", str(p.pid), "--name", "ended", check=0)[1])
        p.stdin.close()
        p.wait()
        wait_for(lambda: self.d.call("GetJob", {"id": jid})["job"]["state"] != "running", what="the end")
        # A cgroup job: its OOM kills and the kernel's other figures.
        cg = HandCgroup(self, "metrics")
        sleeper = cg.spawn("sleep", "60")
        self.addCleanup(sleeper.wait)
        self.addCleanup(sleeper.kill)
        cid = int(run_ctl(self.d, "start", "--cgroup", cg.path, "--name", "cgroup", check=0)[1])
        wait_for(lambda: self.d.call("GetJob", {"id": cid})["job"]["summary"]["samples"] > 1, what="its samples")
        text = self.metrics()
        types = dict(ln.split()[2:4] for ln in text.splitlines() if ln.startswith("# TYPE "))
        for (name, labels) in parse(text):
            self.assertIn(name, doc, "published but not documented")
            self.assertEqual(types[name], doc[name][0], name)
            self.assertEqual({k for k, _ in labels}, doc[name][1], name)
        source = ""
        for path in (("ctl", "metrics", "expo.c"), ("common", "job_figures.c")):  # the job figures' families
            with open(os.path.join(os.environ["RT_SOURCE_DIR"], *path)) as f:
                source += f.read()
        for name in doc:
            self.assertIn('"%s"' % name[len("resource_tracker_"):], source, "documented but not published")
        # On this host everything but the GPU families is there.
        self.assertEqual({n for n in doc if "_gpu_" not in n} - {n for n, _ in parse(text)}, set())

    def token_file(self, token):
        tmp = tempfile.mkdtemp(prefix="rt-token-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "scrape-token")
        with open(path, "w") as f:
            f.write(token + "\n")
        os.chmod(path, 0o644)  # Prometheus (another user in real life) reads it too
        return path

    def test_prometheus_scrapes_the_socket_activated_exporter(self):
        if not PROMETHEUS:
            self.skipTest("no prometheus (scripts/setup.d/60-prometheus-tmux.sh)")
        p, jid = self.busy_job("scraped")
        token = self.token_file("tok-0123456789abcdef")
        port = self.exporter("--jobs", "visible", "--bearer-token-file", token)
        auth = b"Authorization: Bearer tok-0123456789abcdef\r\n"
        # The exporter's HTTP answers, as Prometheus and people see them.
        code, headers, body = http(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + auth +
                                   b"Accept-Encoding: gzip\r\n\r\n")
        self.assertEqual(code, 200)
        self.assertEqual(headers["Content-Type"], "text/plain; version=0.0.4; charset=utf-8")
        self.assertEqual(int(headers["Content-Length"]), len(body.encode()))
        self.promtool(body)
        self.assertEqual(http(port, b"HEAD /metrics HTTP/1.0\r\n" + auth + b"\r\n")[2], "")
        self.assertEqual(http(port, b"GET /nope HTTP/1.1\r\n\r\n")[0], 404)
        self.assertEqual(http(port, b"POST /metrics HTTP/1.1\r\n\r\n")[0], 405)
        self.assertEqual(http(port, b"garbage\r\n\r\n")[0], 400)

        tmp = tempfile.mkdtemp(prefix="rt-prom-")
        self.addCleanup(shutil.rmtree, tmp, True)
        web = free_port()
        # Two scrape jobs: one with the token (Prometheus' authorization
        # credentials_file), one without it.
        with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: rt\n    authorization:\n      credentials_file: %s\n"
                    "    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
                    "  - job_name: anonymous\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
                    % (token, port, port))
        log = open(os.path.join(tmp, "prometheus.log"), "wb")
        prom = subprocess.Popen([PROMETHEUS, "--config.file=" + os.path.join(tmp, "prometheus.yml"),
                                 "--storage.tsdb.path=" + os.path.join(tmp, "data"),
                                 "--web.listen-address=127.0.0.1:%d" % web, "--log.level=warn"],
                                stdout=log, stderr=log)
        self.addCleanup(lambda: (prom.terminate(), prom.wait(), log.close()))

        def query(q):
            url = "http://127.0.0.1:%d/api/v1/query?%s" % (web, urllib.parse.urlencode({"query": q}))
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    return json.load(r)["data"]["result"]
            except OSError:
                return []

        target = "127.0.0.1:%d" % port
        up = wait_for(lambda: query('up{job="rt"} == 1'), timeout=60, what="a successful scrape")
        self.assertEqual(up[0]["metric"]["instance"], target)
        host = wait_for(lambda: query("resource_tracker_host_cpu_busy_cores"), timeout=30, what="the host series")
        self.assertEqual(host[0]["metric"], {"__name__": "resource_tracker_host_cpu_busy_cores", "instance": target,
                                             "job": "rt"})
        cpu = wait_for(lambda: query('resource_tracker_job_cpu_seconds_total{job_name="scraped"}'), timeout=30,
                       what="the job's CPU series")
        self.assertEqual(cpu[0]["metric"], {"__name__": "resource_tracker_job_cpu_seconds_total", "instance": target,
                                            "job": "rt", "job_id": str(jid), "job_name": "scraped", "user": "root"})
        busy = wait_for(lambda: query('resource_tracker_job_cpu_busy_cores{job_name="scraped"} > 0'), timeout=30,
                        what="the job's busy cores")
        self.assertEqual(busy[0]["metric"], dict(cpu[0]["metric"], __name__="resource_tracker_job_cpu_busy_cores"))
        # The scrape without the token fails: nothing of the exporter's.
        wait_for(lambda: query('up{job="anonymous"} == 0'), timeout=30, what="the anonymous scrape to fail")
        self.assertEqual(query('{job="anonymous", __name__=~"resource_tracker_.+"}'), [])
        # A running counter: its rate over the scrapes is about one busy core.
        rate = wait_for(lambda: query('rate(resource_tracker_job_cpu_seconds_total{job_name="scraped"}[5s]) > 0'),
                        timeout=30, what="the job's CPU rate")
        self.assertLess(float(rate[0]["value"][1]), 1.5)  # one process: at most one CPU
        # The host's CPU time counters: every mode of every CPU together runs
        # at one second per second per CPU, and a busy loop keeps one busy
        # (irate: the last two scrapes; rate() under-reads a window the
        # series does not yet fill).
        ncpu = os.cpu_count()
        total = wait_for(lambda: query("sum(irate(resource_tracker_host_cpu_seconds_total[5s]))"), timeout=30,
                         what="the host's CPU time rate")
        self.assertAlmostEqual(float(total[0]["value"][1]), ncpu, delta=0.1 * ncpu)
        busy = query('sum(irate(resource_tracker_host_cpu_time_seconds_total{mode!~"idle|iowait"}[5s]))')
        self.assertGreater(float(busy[0]["value"][1]), 0.5)
        # The daemon gone: scrapes fail (up 0) rather than serve stale figures.
        self.d.stop()
        code, _, body = http(port, b"GET /metrics HTTP/1.1\r\n" + auth + b"\r\n")
        self.assertEqual(code, 503, body)
        self.d.proc = None  # stopped already

    def test_which_jobs_are_published(self):
        users = TestUsers()
        self.addCleanup(users.cleanup)
        alice = users.user("alice")
        _, mine = self.busy_job("rootjob")
        _, hers = self.busy_job("alicejob", user=alice)
        job_ids = lambda text: {dict(l)["job_id"] for l in series(parse(text), "resource_tracker_job_running")}
        self.assertEqual(job_ids(self.metrics()), {str(mine), str(hers)})  # root sees all
        self.assertEqual(job_ids(self.metrics("--jobs", "all")), {str(mine), str(hers)})
        self.assertEqual(job_ids(self.metrics(user=alice)), {str(hers)})
        text = self.metrics("--jobs", "none")
        self.assertEqual(job_ids(text), set())
        self.assertNotIn("resource_tracker_job_", text)
        self.assertIn("resource_tracker_host_cpu_busy_cores", text)
        # All jobs from a user who may not see them: an error, not fewer jobs.
        rc, out, err = run_ctl(self.d, "metrics", "--jobs", "all", user=alice)
        self.assertEqual((rc, out), (4, ""))
        self.assertIn("not an administrator", err)
        owners = {dict(l)["user"] for l in series(parse(self.metrics(user=alice)), "resource_tracker_job_running")}
        self.assertEqual(owners, {alice})

    def test_jobs_go_only_to_a_scraper_with_the_token(self):
        # Every local user can connect to the exporter's port: another user's
        # scrape (the attack: curl 127.0.0.1:10120/metrics) gets nothing
        # without the bearer token, nor with a wrong one; without a token
        # file jobs are not published over HTTP at all (every scrape fails,
        # the reason in the log); the host only needs none.
        users = TestUsers()
        self.addCleanup(users.cleanup)
        mallory = users.user("mallory")
        self.busy_job("secret-project-x")
        port = self.exporter("--jobs", "all", "--bearer-token-file", self.token_file("right-token-0123456789"))
        for auth in ("", "Authorization: Bearer wrong-token-0123456789\r\n", "Authorization: Basic cmlnaHQ=\r\n",
                     "Authorization: Bearer right-token-012345678\r\n"):
            code, headers, body = http_as(mallory, port, "GET /metrics HTTP/1.1\r\nHost: x\r\n%s\r\n" % auth)
            self.assertEqual(code, 401, (auth, body))
            self.assertEqual(headers["WWW-Authenticate"], 'Bearer realm="resource-tracker"')
            self.assertNotIn("resource_tracker_", body)
        for auth in ("Authorization: Bearer right-token-0123456789", "authorization:   bearer   right-token-0123456789 "):
            code, _, body = http_as(mallory, port, "GET /metrics HTTP/1.1\r\n%s\r\nHost: x\r\n\r\n" % auth)
            self.assertEqual(code, 200, body)
            self.assertIn('job_name="secret-project-x"', body)
        port = self.exporter("--jobs", "all")
        code, _, body = http_as(mallory, port, "GET /metrics HTTP/1.1\r\n\r\n")
        self.assertEqual(code, 500, body)
        self.assertNotIn("resource_tracker_", body)
        port = self.exporter("--jobs", "none")
        code, _, body = http_as(mallory, port, "GET /metrics HTTP/1.1\r\n\r\n")
        self.assertEqual(code, 200, body)
        self.assertIn("resource_tracker_host_cpus", body)
        self.assertNotIn("resource_tracker_job_", body)

    def test_ended_jobs_leave_after_keep_ended(self):
        p = subprocess.Popen(["sleep", "0.5"])
        self.addCleanup(p.wait)
        jid = int(run_ctl(self.d, "start", "--pid", str(p.pid), "--name", "brief", check=0)[1])
        wait_for(lambda: self.d.call("GetJob", {"id": jid})["job"]["state"] == "finished", what="the end")
        labels = frozenset({("job_id", str(jid)), ("job_name", "brief"), ("user", "root")})
        m = parse(self.metrics())
        self.assertEqual(m[("resource_tracker_job_running", labels)], 0)
        self.assertIn(("resource_tracker_job_end_time_seconds", labels), m)
        self.assertIn(("resource_tracker_job_cpu_seconds_total", labels), m)
        self.assertNotIn(("resource_tracker_job_cpu_busy_cores", labels), m)  # no current figures once ended
        time.sleep(1.2)
        self.assertNotIn("job_id=\"%d\"" % jid, self.metrics("--keep-ended", "1"))
        self.assertIn("job_id=\"%d\"" % jid, self.metrics("--keep-ended", "60"))

    def test_textfile_is_replaced_atomically_and_removed(self):
        self.busy_job("tf")
        tmp = tempfile.mkdtemp(prefix="rt-textfile-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "resource-tracker.prom")
        run_ctl(self.d, "metrics", "--textfile", path, check=0)  # once
        with open(path) as f:
            self.promtool(f.read())
        # Jobs for the writer's user and group only; the host for everyone.
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o640)
        host_only = os.path.join(tmp, "host.prom")
        run_ctl(self.d, "metrics", "--jobs", "none", "--textfile", host_only, check=0)
        self.assertEqual(os.stat(host_only).st_mode & 0o777, 0o644)
        os.unlink(host_only)
        env = dict(os.environ, RESOURCE_TRACKER_SOCKET=self.d.socket)
        w = subprocess.Popen([CTL, "metrics", "--textfile", path, "--interval", "0.2"], env=env,
                             stderr=subprocess.PIPE)
        self.addCleanup(lambda: (w.poll() is None and w.kill(), w.wait()))
        inodes, stamps = set(), set()
        deadline = time.monotonic() + 10
        while len(stamps) < 3 and time.monotonic() < deadline:
            try:
                with open(path) as f:
                    text = f.read()
                    inodes.add(os.fstat(f.fileno()).st_ino)
            except FileNotFoundError:
                continue
            self.assertTrue(text.endswith("\n") and "resource_tracker_job_running" in text, "never half a file")
            stamps.add(parse(text)[("resource_tracker_host_sample_timestamp_seconds", frozenset())])
            time.sleep(0.1)
        self.assertGreaterEqual(len(inodes), 3, "replaced by rename")
        self.assertEqual(sorted(os.listdir(tmp)), ["resource-tracker.prom"], "no temporary file left")
        w.send_signal(signal.SIGTERM)
        err = w.communicate(timeout=10)[1]
        self.assertEqual(w.returncode, 0, err)
        self.assertFalse(os.path.exists(path), "removed when stopped")

    def test_bad_arguments(self):
        for args in (["--jobs", "some"], ["--keep-ended", "-1"], ["--keep-ended", "86401"], ["--http", "--textfile", "/tmp/x.prom"],
                     ["--interval", "1"], ["--textfile", "/tmp/x.prom", "--interval", "0"], ["extra"],
                     ["--bogus"], ["-x"], ["--jobs"], ["--bearer-token-file", "/tmp/t"]):
            rc, out, err = run_ctl(self.d, "metrics", *args)
            self.assertEqual((rc, out), (2, ""), args)
            self.assertTrue(err.startswith("resource-trackerctl: "), err)


class GpuMetrics(unittest.TestCase):
    """A GPU host (the fake libnvidia-ml.so.1 through the real dlopen path):
    the GPU families and a job's GPU gauges, and top's GPU line and columns."""

    def setUp(self):
        fake = os.environ.get("RT_FAKE_NVML_DIR")
        if not fake or not os.path.exists(os.path.join(fake, "libnvidia-ml.so.1")):
            self.fail("RT_FAKE_NVML_DIR does not hold the fake libnvidia-ml.so.1")
        self.job = subprocess.Popen(["sleep", "600"])
        self.addCleanup(lambda: (self.job.kill(), self.job.wait()))
        cfg = tempfile.NamedTemporaryFile("w", prefix="rt-fake-nvml-", suffix=".conf", delete=False)
        self.addCleanup(os.unlink, cfg.name)
        gib = 1 << 30
        cfg.write("driver=535.104.05\n"
                  "device\nname=NVIDIA H100 80GB HBM3\nuuid=GPU-aaaa\npci=00000000:17:00.0\nutil=40\n"
                  "mem_total=%d\nmem_used=%d\ntemp=51\npower_mw=312500\nclock=1980\n"
                  "energy_mj=1000000\nenergy_step_mj=1000\ngpm=1\ngpm_sm=35\ngpm_occ=20\ngpm_tensor=10\ngpm_dram=25\n"
                  "ecc_corrected=2\n"
                  "process\npid=%d\nvram=%d\nsm=30\nlist=compute\n" % (80 * gib, 3 * gib, self.job.pid, 2 * gib))
        cfg.close()
        self.d = Daemon(interval=0.25, env={"LD_LIBRARY_PATH": fake, "FAKE_NVML_CONFIG": cfg.name}).start()
        self.addCleanup(self.d.cleanup)
        self.addCleanup(self.d.stop)
        self.jid = int(run_ctl(self.d, "start", "--pid", str(self.job.pid), "--name", "gpujob", "--request", "gpus=2",
                               check=0)[1])
        wait_for(lambda: (self.d.call("GetJob", {"id": self.jid})["job"]["current"] or {}).get("gpu_vram_bytes"),
                 what="the job's GPU figures")

    def test_gpu_families_and_job_gauges(self):
        wait_for(lambda: self.d.call("GetGpus")["gpus"][0]["gpm"], what="GPM figures")
        wait_for(lambda: self.d.call("GetJob", {"id": self.jid})["job"]["summary"]["gpm"]["sm_active_pct"],
                 what="the job's GPM figures")
        text = run_ctl(self.d, "metrics", check=0)[1]
        if PROMTOOL:
            p = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(), capture_output=True)
            self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())
        m = parse(text)
        gpu = frozenset({("gpu", "0")})
        self.assertEqual(series(m, "resource_tracker_host_gpu_info"),
                         {frozenset({("gpu", "0"), ("name", "NVIDIA H100 80GB HBM3"), ("uuid", "GPU-aaaa"),
                                     ("vendor", "nvidia")}): 1})
        self.assertEqual(m[("resource_tracker_host_gpu_busy_ratio", gpu)], 0.4)
        self.assertEqual(m[("resource_tracker_host_gpu_memory_total_bytes", gpu)], 80 << 30)
        self.assertEqual(m[("resource_tracker_host_gpu_memory_used_bytes", gpu)], 3 << 30)
        self.assertEqual(m[("resource_tracker_host_gpu_temperature_celsius", gpu)], 51)
        self.assertEqual(m[("resource_tracker_host_gpu_power_watts", gpu)], 312.5)
        self.assertGreaterEqual(m[("resource_tracker_host_gpu_energy_joules_total", gpu)], 1000)
        labels = frozenset({("job_id", str(self.jid)), ("job_name", "gpujob"), ("user", "root")})
        self.assertEqual(m[("resource_tracker_job_gpu_memory_used_bytes", labels)], 2 << 30)
        current = self.d.call("GetJob", {"id": self.jid})["job"]["current"]
        self.assertGreater(m[("resource_tracker_job_gpu_busy_gpus", labels)], 0)
        self.assertEqual(m[("resource_tracker_job_gpu_busy_gpus", labels)], current["gpu_usage"])
        # its use of the 2 GPUs it asked for
        eff = self.d.call("GetJob", {"id": self.jid})["job"]["efficiency"]
        self.assertAlmostEqual(m[("resource_tracker_job_gpu_efficiency_ratio", labels)], eff["gpu_pct"] / 100, delta=0.05)
        self.assertEqual(m[("resource_tracker_job_request_gpus", labels)], 2)
        # who holds it, and its health (docs/gpu.md)
        self.assertEqual(m[("resource_tracker_gpu_user_memory_bytes", frozenset({("gpu", "0"), ("user", "root")}))],
                         2 << 30)
        root = frozenset({("user", "root")})
        self.assertEqual((m[("resource_tracker_user_gpu_held_gpus", root)],
                          m[("resource_tracker_user_gpu_idle_held_gpus", root)],
                          m[("resource_tracker_user_gpu_processes", root)],
                          m[("resource_tracker_user_gpu_memory_bytes", root)]), (1, 0, 1, 2 << 30))
        self.assertEqual((m[("resource_tracker_gpu_idle_held", gpu)], m[("resource_tracker_gpu_idle_held_seconds", gpu)],
                          m[("resource_tracker_gpu_busy_but_stalled", gpu)]), (0, 0, 0))
        self.assertEqual((m[("resource_tracker_gpu_sm_active_ratio", gpu)], m[("resource_tracker_gpu_dram_bandwidth_ratio",
                          gpu)]), (0.35, 0.25))
        self.assertEqual((m[("resource_tracker_gpu_xid_errors_total", gpu)],
                          m[("resource_tracker_gpu_ecc_corrected_errors", gpu)]), (0, 2))
        self.assertEqual((m[("resource_tracker_job_gpu_xid_errors_total", labels)],
                          m[("resource_tracker_job_gpu_ecc_corrected_errors_total", labels)]), (0, 0))
        # The GPU families as documented.
        doc = documented()
        types = dict(ln.split()[2:4] for ln in text.splitlines() if ln.startswith("# TYPE "))
        for name in (n for n in doc if "_gpu_" in n):
            self.assertEqual(types.get(name), doc[name][0], name)
            self.assertEqual({k for k, _ in next(l for (n, l) in m if n == name)}, doc[name][1], name)

    def test_top_shows_the_gpu_and_the_job_columns(self):
        out = run_ctl(self.d, "top", "--iterations", "1", check=0)[1]
        lines = out.splitlines()
        # with who holds it: the job's process (root's) and a stranger's
        self.assertIn("GPU      0 NVIDIA H100 80GB HBM3: 40% busy, VRAM 3.00 GiB of 80.0 GiB, 51 °C, 312 W; root 2.00 GiB",
                      lines)
        head = next(ln for ln in lines if ln.lstrip().startswith("ID "))
        self.assertEqual(head.split()[-4:], ["GPU", "VRAM", "TIME", "COMMAND"])
        row = next(ln for ln in lines if " gpujob " in ln).split()
        current = self.d.call("GetJob", {"id": self.jid})["job"]["current"]
        self.assertEqual(row[-5:-2], ["%.2f" % current["gpu_usage"], "2.00", "GiB"])  # GPU, VRAM
        self.assertEqual(row[-1], "-")  # started with start: no command line


if __name__ == "__main__":
    unittest.main(verbosity=2)
