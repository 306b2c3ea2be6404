"""resource-trackerctl report and recommend against a real daemon and real
jobs (a CPU burner, a memory grower and a disk writer in one tree):

- the HTML report rendered by Debian's chromium, headless and with no
  network: every chart drawn (canvas pixels in the job's and the host's
  colours), no script error, nothing fetched but the file itself, nothing
  outside it referenced;
- the tables equal the jobs' summaries (this run, two earlier runs of the
  same name, combined), the recommendation equals the Python rules;
- host facts from GetHostInfo, the cloud from an instance metadata stand-in;
- prices from a Keeper API stand-in, and a report all the same when it is
  unreachable, slow or answers garbage;
- a long job downsampled to a bounded number of points with its peak;
- recommend's outputs, option errors, escaping of what users put in jobs."""

import html
import html.parser
import json
import math
import os
import platform
import re
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, os.path.dirname(__file__))
import synthjob  # noqa: E402
from rtlib import CTL, IFACE, TOOLS, Daemon, TestUsers, job_samples, run_ctl, wait_for  # noqa: E402

MIB = 1048576
CHROMIUM = shutil.which("chromium")
JOB_COLORS, HOST_COLORS = [(5, 150, 105), (52, 211, 153)], [(37, 99, 235), (96, 165, 250)]  # report_charts.c
AZURE = {"compute": {"vmSize": "Standard_D2s_v3", "location": "westeurope", "zone": "2"}}
SERVER = {"vendor_id": "hcloud", "server_id": "cx22", "api_reference": "cx22", "display_name": "CX22",
          "vcpus": 2, "memory_amount": 4096, "gpu_count": 0, "min_price_ondemand": 0.0072}
PRICES = [{"vendor_id": "azure", "region_id": "eastus", "server_id": "Standard_D2s_v3", "allocation": "ondemand",
           "operating_system": "Linux", "price": 0.11, "currency": "USD"},
          {"vendor_id": "azure", "region_id": "westeurope", "server_id": "Standard_D2s_v3",
           "allocation": "ondemand", "operating_system": "Linux", "price": 0.096, "currency": "USD"}]


class StandIn:
    """An HTTP server on loopback answering with handler(path, query, headers)
    -> (status, body, delay); it records every request."""

    def __init__(self, handler):
        self.requests = []
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_GET(self):
                u = urlsplit(self.path)
                outer.requests.append((u.path, parse_qs(u.query), dict(self.headers)))
                status, body, delay = handler(u.path, parse_qs(u.query), self.headers)
                time.sleep(delay)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up

            do_PUT = do_GET

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def imds(path, query, headers):
    """Azure's instance metadata; every other vendor's probe fails."""
    if path == "/metadata/instance" and headers.get("Metadata") == "true":
        return 200, AZURE, 0
    return 404, b"", 0


def round_memory(mib):
    """The Python tracker's rule (report.py)."""
    for step in (128, 256, 512, 1024, 2048):
        if mib <= step:
            return step
    return math.ceil(mib / 1024) * 1024


def fmt_bytes(b):
    """ctl_fmt_bytes"""
    units, u = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"], 0
    while b >= 1024 and u < 5:
        b /= 1024
        u += 1
    return "%.0f B" % b if u == 0 else "%.*f %s" % (2 if b < 10 else 1 if b < 100 else 0, b, units[u])


class Cells(html.parser.HTMLParser):
    """Table cells with data-stat, ids' text, every tag and attribute."""

    def __init__(self, text):
        super().__init__()
        self.cells, self.ids, self.tags, self.attrs, self.style = {}, {}, [], [], ""
        self._cell = self._id = None
        self._in_style = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        self.attrs += [(tag, k, v) for k, v in attrs]
        self._in_style = tag == "style"
        if "data-stat" in a:
            self._cell = [a, ""]
            self.cells[(a["data-run"], a["data-stat"])] = self._cell
        elif "id" in a and tag in ("p", "code", "pre", "table", "span"):
            self._id = [a["id"], ""]
            self.ids[a["id"]] = self._id

    def handle_endtag(self, tag):
        if tag == "td":
            self._cell = None
        if self._id and tag in ("p", "code", "pre"):
            self._id = None
        self._in_style = False

    def handle_data(self, data):
        if self._cell:
            self._cell[1] += data
        if self._id:
            self._id[1] += data
        if self._in_style:
            self.style += data

    def value(self, run, stat):
        a, _ = self.cells[(str(run), stat)]
        return float(a["data-value"])

    def text(self, run, stat):
        return self.cells[(str(run), stat)][1]


def memory_peak(s):
    """What recommend asks for: the job's memory peak, else (a run from
    before it) its peak PSS."""
    return s["memory_peak_bytes"] if s["memory_peak_bytes"] is not None else s["peak_pss_bytes"]


def rec_from(summaries):
    """The recommendation of the Python rules from Job summaries (and the
    report's mean cores is the summary's avg_cores)."""
    mean = sum(s["avg_cores"] for s in summaries) / len(summaries)
    peak = max(memory_peak(s) for s in summaries)
    return max(1, round(mean)), round_memory(peak / MIB * 1.2)


def page_requests(netlog):
    """URLs of the requests in a chromium network log that a page started
    (the browser's own, such as update checks, have no initiator origin)."""
    with open(netlog, errors="replace") as f:
        text = f.read()
    try:
        log = json.loads(text)
    except ValueError:  # cut short: close the event list
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [e["params"]["url"] for e in log["events"]
            if e["type"] == start and "url" in e.get("params", {}) and e["params"].get("initiator") != "not an origin"]


def render(text, tmp):
    """chromium --dump-dom of a copy with a probe script; returns the
    probe's findings and the requests the page made (network log)."""
    d = tempfile.mkdtemp(prefix="browser-", dir=tmp)
    page = os.path.join(d, "report.html")
    errors = "<script>window.rtErrors=[];window.onerror=function(m){rtErrors.push(String(m));};</script>"
    probe = """<script>(function(){
      function near(d,i,c){return d[i+3]>128&&Math.abs(d[i]-c[0])<40&&Math.abs(d[i+1]-c[1])<40&&
        Math.abs(d[i+2]-c[2])<40;}
      var out={errors:window.rtErrors,graphs:(window.rtGraphs||[]).length,charts:{},
        fetched:performance.getEntriesByType('resource').map(function(e){return e.name;})};
      document.querySelectorAll('div.plot').forEach(function(div){
        var info={canvases:0,painted:0,job:0,host:0};
        div.querySelectorAll('canvas').forEach(function(cv){
          info.canvases++;
          var px=cv.getContext('2d').getImageData(0,0,cv.width,cv.height).data;
          for(var i=0;i<px.length;i+=4){if(px[i+3]>0)info.painted++;
            if(near(px,i,%s)||near(px,i,%s))info.job++;if(near(px,i,%s)||near(px,i,%s))info.host++;}
        });
        out.charts[div.id]=info;
      });
      /* The axes as people see them: labels, cut or outside the chart, and y titles. */
      function axes(){var a={};document.querySelectorAll('div.plot').forEach(function(div){
        var box=div.getBoundingClientRect(),x=[];
        div.querySelectorAll('.dygraph-axis-label-x').forEach(function(l){var r=l.getBoundingClientRect();
          x.push({text:l.textContent,cut:l.scrollWidth>l.clientWidth+1,inside:r.left>=box.left-1&&
            r.right<=box.right+1});});
        var y=div.querySelector('.dygraph-ylabel');a[div.id]={x:x,ylabel:y?y.textContent:null};});return a;}
      out.axes=axes();
      var clock=document.getElementById('rt-clock');
      if(clock){clock.click();out.clock=axes();}
      var pre=document.createElement('pre');pre.id='probe';pre.textContent=JSON.stringify(out);
      document.body.appendChild(pre);})();</script>""" % tuple(list(c) for c in JOB_COLORS + HOST_COLORS)
    with open(page, "w") as f:
        f.write(text.replace("<head>", "<head>" + errors, 1).replace("</body>", probe + "</body>"))
    netlog = os.path.join(d, "net.json")
    p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                        "--disable-background-networking", "--disable-component-update", "--no-first-run",
                        "--no-default-browser-check", "--disable-sync", "--disable-extensions",
                        "--user-data-dir=" + os.path.join(d, "profile"), "--log-net-log=" + netlog,
                        "--proxy-server=127.0.0.1:9",  # no network: every request fails here
                        "--window-size=1280,2400", "--virtual-time-budget=5000", "--dump-dom",
                        "file://" + page], capture_output=True, timeout=120,
                       env=dict(os.environ, HOME=d))
    m = re.search(r'<pre id="probe">(.*?)</pre>', p.stdout.decode(errors="replace"), re.S)
    if not m:
        raise AssertionError("no probe output from chromium:\n" + p.stderr.decode(errors="replace")[-3000:])
    return json.loads(html.unescape(m.group(1))), page_requests(netlog)


YLABELS = {"chart-cpu": "cores", "chart-memory": "bytes", "chart-disk-io": "bytes/s", "chart-disk-space": "bytes",
           "chart-network": "bytes/s", "chart-gpu": "GPUs", "chart-gpus": "GPUs", "chart-vram": "bytes"}


def check_axes(test, found, since, clock):
    """Every chart has its y title and time labels that are whole, inside
    the chart and in one format: `since` (the time since the start) as
    drawn, `clock` once the clock-time button is pressed."""
    for axes, pattern in ((found["axes"], since), (found["clock"], clock)):
        test.assertEqual(sorted(axes), sorted(found["charts"]))
        for chart, a in axes.items():
            test.assertEqual(a["ylabel"], YLABELS[chart])
            test.assertGreaterEqual(len(a["x"]), 2, (chart, a["x"]))
            for label in a["x"]:
                test.assertRegex(label["text"], "^(%s)$" % pattern, chart)
                test.assertFalse(label["cut"], (chart, label))
                test.assertTrue(label["inside"], (chart, label))


def screenshot(path, tmp):
    """chromium's picture of the page at path (1280 wide): a PNG's size."""
    d = tempfile.mkdtemp(prefix="shot-", dir=tmp)
    png = os.path.join(d, "report.png")
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--no-first-run", "--user-data-dir=" + os.path.join(d, "profile"), "--proxy-server=127.0.0.1:9",
                    "--window-size=1280,2400", "--virtual-time-budget=5000", "--hide-scrollbars",
                    "--screenshot=" + png, "file://" + path], capture_output=True, timeout=120,
                   env=dict(os.environ, HOME=d))
    with open(png, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError("no screenshot from chromium")
    return struct.unpack(">II", head[16:24]), os.path.getsize(png)


@unittest.skipUnless(CHROMIUM, "chromium is not installed (scripts/setup.d/60-chromium.sh)")
class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rt-report-")
        os.chmod(cls.tmp, 0o755)
        cls.imds = StandIn(imds)
        cls.keeper_mode = "ok"
        cls.keeper = StandIn(cls.keeper_answer)
        cls.users = TestUsers()
        try:
            cls.other = cls.users.user("other")
            cls.d = Daemon(interval=0.2, env={"RESOURCE_TRACKERD_TEST_IMDS_BASE": cls.imds.url,
                                              "RESOURCE_TRACKERD_TEST_ALICLOUD_BASE": cls.imds.url}).start()
            cls.env = {"RESOURCE_TRACKER_KEEPER_URL": cls.keeper.url}
            cls.ids = []
            for i in range(3):
                if i == 2:  # another user's job of the same name, between ours
                    run_ctl(cls.d, "run", "-q", "-n", "mix", "--", "true", user=cls.other, check=0)
                out = os.path.join(cls.tmp, "w%d.json" % i)
                run_ctl(cls.d, "run", "-q", "-n", "mix", "--", os.path.join(TOOLS, "rt_workload"),
                        "--burners", "1", "--burn-secs", "1.2", "--grow", "48:700",
                        "--write", "8:%s/w%d.data" % (cls.tmp, i), "--out", out, check=0)
                cls.ids.append(json.loads(run_ctl(cls.d, "status", "mix", "--json", check=0)[1])["job"]["id"])
            cls.jobs = {j: cls.d.call("GetJob", {"id": j})["job"] for j in cls.ids}
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            if getattr(cls, "d", None):
                cls.d.stop()
        finally:
            if getattr(cls, "d", None):
                cls.d.cleanup()
            cls.users.cleanup()
            cls.imds.close()
            cls.keeper.close()
            shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def keeper_answer(cls, path, query, headers):
        mode = cls.keeper_mode
        if mode == "slow":
            return 200, [SERVER], 10
        if mode == "garbage":
            return 200, b"<html>maintenance</html>", 0
        if mode == "error":
            return 500, b"{}", 0
        if path == "/servers":
            return 200, [SERVER], 0
        if path == "/server/azure/Standard_D2s_v3/prices":
            return 200, PRICES, 0
        return 404, {"detail": "Not Found"}, 0

    def report(self, *args, env=None, check=0):
        path = os.path.join(self.tmp, "r-%d.html" % time.monotonic_ns())
        t = time.monotonic()
        rc, out, err = run_ctl(self.d, "report", "-o", path, *args, env=dict(self.env, **(env or {})),
                               check=check)
        elapsed = time.monotonic() - t
        text = None
        if rc == 0:
            with open(path) as f:
                text = f.read()
        return text, err, elapsed

    def test_report_in_a_browser(self):
        type(self).keeper_mode = "ok"
        self.keeper.requests.clear()
        text, err, _ = self.report(str(self.ids[-1]))
        self.assertLess(len(text), 1 << 20, "a mailable file")
        found, requests = render(text, self.tmp)
        self.assertEqual(found["errors"], [])
        charts = found["charts"]
        self.assertEqual(sorted(charts), ["chart-cpu", "chart-disk-io", "chart-disk-space", "chart-memory",
                                          "chart-network"])  # no GPU charts on a host without GPUs
        self.assertEqual(found["graphs"], len(charts))
        for name, c in charts.items():
            self.assertGreater(c["canvases"], 0, name)
            self.assertGreater(c["painted"], 500, name)
            self.assertGreater(c["host"], 20, name)  # the host's series is drawn
        for name in ("chart-cpu", "chart-memory", "chart-disk-io"):  # the burner, grower and writer
            self.assertGreater(charts[name]["job"], 20, name)
        # A job of seconds: its time axis in seconds since the start, or the clock to the second.
        check_axes(self, found, r"\d+(\.\d)?s", r"\d\d:\d\d:\d\d(\.\d)?")
        # The disk figure is df's used (total - free blocks), not total - available.
        host = self.d.call("GetHostSample")["sample"]
        mounts = [m for d in host["disk"] for m in d["mounts"]]
        used = sum(m["used_bytes"] for m in mounts)
        unavailable = sum(m["total_bytes"] - m["available_bytes"] for m in mounts)
        peak = Cells(text).value(self.ids[-1], "host_disk_space_peak_bytes")
        self.assertAlmostEqual(peak, used, delta=256 * MIB)
        if unavailable - used > 512 * MIB:  # reserved blocks that total - available would count
            self.assertLess(peak, unavailable - 256 * MIB)
        path = os.path.join(self.tmp, "shot.html")
        with open(path, "w") as f:
            f.write(text)
        (width, height), size = screenshot(path, self.tmp)
        self.assertEqual((width, height), (1280, 2400))
        self.assertGreater(size, 50000, "a page with charts, not a blank one")
        # Nothing fetched: no resource loaded, no request from the page (the
        # browser's own background requests have no origin and fail at the proxy).
        self.assertEqual(found["fetched"], [])
        self.assertEqual(requests, [])

    def test_nothing_outside_the_file(self):
        text, _, _ = self.report(str(self.ids[-1]))
        c = Cells(text)
        self.assertEqual(sorted(set(c.tags) & {"link", "img", "iframe", "object", "embed", "a", "base", "form"}),
                         [])
        for tag, k, v in c.attrs:
            self.assertNotIn(k, ("src", "href", "srcset", "action", "poster", "background"), (tag, k, v))
        self.assertNotIn("url(", c.style)
        self.assertNotIn("@import", c.style)
        self.assertNotIn("sourceMappingURL", text)
        self.assertEqual(text.count("<script"), 4)  # data, dygraphs, its synchronizer, the charts

    def test_tables_equal_the_summaries(self):
        text, _, _ = self.report(str(self.ids[-1]))
        c = Cells(text)
        this, hist = self.ids[-1], self.ids[-2::-1]  # earlier runs newest first, not the other user's
        runs = [this] + hist
        self.assertEqual(sorted({r for r, _ in c.cells}), sorted([str(r) for r in runs] + ["combined"]))
        for r in runs:
            s = self.jobs[r]["summary"]
            self.assertEqual(c.value(r, "duration_secs"), s["duration_secs"])
            self.assertEqual(c.value(r, "cores_mean"), s["avg_cores"])
            self.assertEqual(c.text(r, "cores_mean"), "%.2f" % s["avg_cores"])
            self.assertEqual(c.value(r, "cores_peak"), s["peak_cores"])
            self.assertEqual(c.value(r, "memory_peak_bytes"), s["memory_peak_bytes"])
            self.assertEqual(c.text(r, "memory_peak_bytes"), fmt_bytes(s["memory_peak_bytes"]))
            # run's jobs are cgroups here: no PSS or RSS, a row without a value where shown.
            for stat, key in (("memory_pss_peak_bytes", "peak_pss_bytes"), ("memory_rss_peak_bytes", "peak_rss_bytes"),
                              ("memory_pss_mean_bytes", "avg_pss_bytes")):
                self.assertIsNone(s[key])
                self.assertNotIn("data-value", c.cells.get((str(r), stat), ({}, ""))[0])
            self.assertEqual(c.value(r, "disk_read_bytes"), s["disk_read_bytes"])
            self.assertEqual(c.value(r, "disk_write_bytes"), s["disk_write_bytes"])
            self.assertEqual(c.text(r, "disk_write_bytes"), fmt_bytes(s["disk_write_bytes"]))
            # The workload: a burner of 1.2 s of CPU, 48 MiB grown, 8 MiB written.
            self.assertGreater(s["cpu_secs"], 1.1)
            self.assertGreaterEqual(s["memory_peak_bytes"], 48 * MIB)
            self.assertGreaterEqual(s["disk_write_bytes"], 8 * MIB)
            self.assertEqual(self.jobs[r]["tracking"]["kind"], "cgroup")
            # The host's figures come from this run's samples only.
            for stat in ("host_net_in_bytes", "host_net_out_bytes", "host_disk_space_peak_bytes"):
                a, txt = c.cells[(str(r), stat)]
                self.assertEqual(("data-value" in a, txt), (True, txt) if r == this else (False, "—"))
        self.assertIn("<tr><th>Tracked</th><td>as the cgroup %s</td></tr>" % self.jobs[this]["tracking"]["cgroup"], text)
        summaries = [self.jobs[r]["summary"] for r in runs]
        self.assertAlmostEqual(c.value("combined", "cores_mean"),
                               sum(s["avg_cores"] for s in summaries) / 3, delta=1e-12)
        self.assertEqual(c.value("combined", "memory_peak_bytes"), max(s["memory_peak_bytes"] for s in summaries))
        self.assertEqual(c.value("combined", "cores_peak"), max(s["peak_cores"] for s in summaries))
        cpus, mem = rec_from(summaries)
        self.assertEqual(c.ids["rec-slurm"][1], "--cpus-per-task=%d --mem=%dM" % (cpus, mem))
        self.assertEqual(c.ids["rec-metaflow"][1], "@resources(cpu=%d, memory=%d)" % (cpus, mem))
        self.assertEqual(c.ids["rec-kubernetes"][1],
                         'resources:\n  requests:\n    cpu: "%d"\n    memory: %dMi\n' % (cpus, mem))
        # The job and the host.
        self.assertIn("<td>mix</td>", text)
        self.assertIn("rt_workload --burners 1", text)
        with open("/etc/os-release") as f:
            pretty = dict(re.findall(r'^(\w+)="?([^"\n]*)"?$', f.read(), re.M))["PRETTY_NAME"]
        for fact in (pretty, platform.release(), "azure", "westeurope", "Standard_D2s_v3"):
            self.assertIn("<td>%s</td>" % html.escape(fact), text)

    def test_prices_from_the_stand_in(self):
        type(self).keeper_mode = "ok"
        self.keeper.requests.clear()
        text, err, _ = self.report(str(self.ids[-1]))
        self.assertEqual(err, "")
        paths = [r[0] for r in self.keeper.requests]
        self.assertEqual(paths, ["/servers", "/server/azure/Standard_D2s_v3/prices"])
        summaries = [self.jobs[r]["summary"] for r in self.ids]
        cpus, mem = rec_from(summaries)
        q = self.keeper.requests[0][1]
        self.assertEqual(q, {"vcpus_min": [str(cpus)], "memory_min": ["%.3f" % (mem / 1024)],
                             "order_by": ["min_price_ondemand"], "order_dir": ["asc"], "limit": ["1"]})
        for _, _, headers in self.keeper.requests:
            self.assertEqual(headers.get("X-Application-ID"), "resource-tracker")
        prices = Cells(text).ids["prices"][1]
        dur = self.jobs[self.ids[-1]]["summary"]["duration_secs"]
        self.assertIn("CX22 (hcloud cx22): 2 vCPUs, 4.0 GiB memory, $0.0072 per hour on demand: $%.6f"
                      % (0.0072 * dur / 3600), prices)
        self.assertIn("(azure Standard_D2s_v3) cost $%.6f at $0.0960 per hour" % (0.096 * dur / 3600), prices)
        cur, rec = 0.096 * dur / 3600, 0.0072 * dur / 3600
        self.assertIn("the recommended server would cost %.0f%% less" % (abs(cur - rec) / cur * 100), prices)

    def test_no_prices(self):
        down = StandIn(lambda *a: (200, b"", 0))
        down.close()  # a port nobody listens on
        for mode, env, args, want in (
                ("ok", {"RESOURCE_TRACKER_KEEPER_URL": down.url}, (),
                 "did not answer (Failed to connect to 127.0.0.1"),
                ("slow", {}, (), "did not answer (Operation timed out"),
                ("garbage", {}, (), "did not answer (the answer is not a list of servers)"),
                ("error", {}, (), "did not answer (HTTP 500)"),
                ("ok", {}, ("--no-prices",), "Prices were not looked up (--no-prices)"),
                ("ok", {"RESOURCE_TRACKER_KEEPER_URL": "off"}, (),
                 "not looked up (RESOURCE_TRACKER_KEEPER_URL is off)"),
                ("ok", {}, ("--keeper-url", "off"), "not looked up (--keeper-url off)")):
            with self.subTest(mode=mode, env=env, args=args):
                type(self).keeper_mode = mode
                self.keeper.requests.clear()
                text, err, elapsed = self.report(str(self.ids[-1]), *args, env=env)
                self.assertLess(elapsed, 8, "the lookup is bounded (3 s)")
                c = Cells(text)
                self.assertIn(want, html.unescape(c.ids["prices"][1]))
                # Everything else is there.
                self.assertIn("chart-cpu", text)
                self.assertEqual(c.value(self.ids[-1], "cores_peak"), self.jobs[self.ids[-1]]["summary"]["peak_cores"])
                if "not looked up" in want:
                    self.assertEqual((self.keeper.requests, err), ([], ""))
                else:
                    self.assertRegex(err, r"^resource-trackerctl: report: no prices: .* did not answer")
                    self.assertEqual(len(err.splitlines()), 1)

    def test_output_to_stdout_and_errors(self):
        rc, out, err = run_ctl(self.d, "report", str(self.ids[0]), "--no-prices", check=0)  # stdout is a pipe
        self.assertTrue(out.startswith("<!DOCTYPE html>") and out.endswith("</html>\n"), out[:100])
        rc, out2, _ = run_ctl(self.d, "report", "-o", "-", str(self.ids[0]), "--no-prices", check=0)
        self.assertEqual(re.sub(r"Generated by .*?</footer>", "", out), re.sub(r"Generated by .*?</footer>", "", out2))
        # Nothing half-written: no file, no temporary file.
        rc, _, err = run_ctl(self.d, "report", "-o", os.path.join(self.tmp, "missing", "r.html"), "mix",
                             "--no-prices")
        self.assertEqual(rc, 1, err)
        self.assertIn("cannot create a file next to", err)
        with open("/dev/full", "w") as full:
            p = subprocess.run([CTL, "report", "mix", "--no-prices"], stdout=full, stderr=subprocess.PIPE,
                               env=dict(os.environ, RESOURCE_TRACKER_SOCKET=self.d.socket))
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"report: cannot write to stdout: No space left on device", p.stderr)
        before = sorted(os.listdir(self.tmp))
        report, _, _ = self.report("mix", "--no-prices")
        self.assertEqual(len(sorted(os.listdir(self.tmp))), len(before) + 1, "no temporary file left")
        rc, _, err = run_ctl(self.d, "report", "-o", os.path.join(self.tmp, "x.html"), "mix",
                             env={"RESOURCE_TRACKER_DYGRAPHS_DIR": os.path.join(self.tmp, "none")})
        self.assertEqual(rc, 1)
        self.assertIn("dygraph.min.js: No such file or directory (the report needs Debian's libjs-dygraphs)", err)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x.html")))
        for args, msg in ((["mix", "--history", "x"], "report: --history 'x': a history is a whole number of earlier "
                                                      "runs from 0 to 100"),
                          (["mix", "--history", "101"], "--history '101': a history is"),
                          (["mix", "--bogus"], "report: unknown option --bogus"),
                          (["mix", "-x"], "report: unknown option -x"),
                          (["mix", "--no-prices=1"], "report: --no-prices takes no value"),
                          (["mix", "-o"], "report: --output needs a value (FILE)"),
                          (["mix", "--keeper-url"], "report: --keeper-url needs a value (URL)"),
                          (["mix", "--keeper-url", "ftp://x"], "needs an http:// or https:// URL"),
                          (["mix", "--json"], "report: report takes no --json or --format"),
                          ([], "report: needs a JOB: a JOB is a job's id or its name"),
                          (["mix", "other"], "report: unexpected argument 'other'")):
            with self.subTest(args=args):
                rc, out, err = run_ctl(self.d, "report", *args)
                self.assertEqual((rc, out), (2, ""), err)
                self.assertIn(msg, err)
        rc, _, err = run_ctl(self.d, "report", "-o", "-", "nosuchjob")
        self.assertEqual(rc, 5, err)
        # Another user sees neither our job nor our runs.
        rc, _, err = run_ctl(self.d, "report", "-o", "-", str(self.ids[0]), user=self.other)
        self.assertEqual(rc, 4, err)
        theirs = json.loads(run_ctl(self.d, "jobs", "--json", user=self.other, check=0)[1])
        self.assertEqual([j["name"] for j in theirs], ["mix"])
        rc, out, err = run_ctl(self.d, "recommend", str(theirs[0]["id"]), "--json", user=self.other, check=0)
        self.assertEqual([r["id"] for r in json.loads(out)["runs"]], [theirs[0]["id"]])

    def test_what_users_write_is_escaped(self):
        evil = "<script>alert(1)</script>"
        run_ctl(self.d, "run", "-q", "-n", "esc", "--project-name", evil, "--tag", 'k="<b>x</b>"', "--",
                "sh", "-c", "exit 3", "'" + evil, "it's\tan\x1b[2J", check=3)
        rc, text, err = run_ctl(self.d, "report", "-o", "-", "esc", "--no-prices", check=0)
        self.assertNotIn(evil, text)
        self.assertNotIn("<b>x</b>", text)
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", text)
        self.assertIn("<code>k=&quot;&lt;b&gt;x&lt;/b&gt;&quot;</code>", text)
        self.assertEqual(text.count("<script"), 4)
        # The command quoted as for a shell.
        self.assertIn("<code>sh -c &#39;exit 3&#39; &#39;&#39;\\&#39;&#39;&lt;script&gt;", text)
        # Control characters escaped, in bash's $'...': what a shell needs, nothing for the terminal.
        self.assertIn("&lt;/script&gt;&#39; $&#39;it\\&#39;s\\tan\\x1b[2J&#39;</code>", text)
        self.assertIn("<td>failed</td>", text)
        self.assertIn("<th>End</th><td>exit status 3</td>", text)

    def test_history_shows_what_differs(self):
        # A sweep over --tag lr=...: the runs' tags and metadata that differ, by key.
        for lr, env in (("0.1", "a"), ("0.01", "a"), ("0.001", "b")):
            run_ctl(self.d, "run", "-q", "-n", "sweep", "--tag", "lr=" + lr, "--tag", "batch=64", "--env", env,
                    "--", "true", check=0)
        jobs = sorted(self.d.call("ListJobs", {"name": "sweep"})["jobs"], key=lambda j: j["id"])
        text, _, _ = self.report("sweep", "--no-prices")
        c = Cells(text)
        self.assertEqual([c.text(j["id"], "tag:lr") for j in jobs], ["0.1", "0.01", "0.001"])
        self.assertEqual([c.text(j["id"], "env") for j in jobs], ["a", "a", "b"])
        for same in ("tag:batch", "command", "project_name"):  # the same in every run, or in none: no row
            self.assertNotIn((str(jobs[0]["id"]), same), c.cells)
        self.assertIn("The first rows are what differs between the runs", text)

    def test_recommend(self):
        summaries = [self.jobs[r]["summary"] for r in self.ids]
        cpus, mem = rec_from(summaries)
        rc, out, err = run_ctl(self.d, "recommend", "mix", check=0)
        self.assertIn("Job %d (mix): this run and 2 earlier runs with its name" % self.ids[-1], out)
        self.assertIn("Next run: %d vCPU%s, %d MiB memory" % (cpus, "" if cpus == 1 else "s", mem), out)
        self.assertIn("Slurm:       --cpus-per-task=%d --mem=%dM\n" % (cpus, mem), out)
        self.assertIn('Kubernetes:\n  resources:\n    requests:\n      cpu: "%d"\n      memory: %dMi\n'
                      % (cpus, mem), out)
        self.assertIn("Metaflow:    @resources(cpu=%d, memory=%d)\n" % (cpus, mem), out)
        for flags in (["--json"], ["--format", "json"], ["-fjson"]):
            o = json.loads(run_ctl(self.d, "recommend", "mix", *flags, check=0)[1])
            self.assertEqual([r["id"] for r in o["runs"]], self.ids[::-1])
            self.assertEqual(o["memory_figure"], "memory_peak")
            rec = o["recommendation"]
            self.assertEqual((rec["cpus"], rec["memory_mib"], rec["gpus"], rec["vram_mib"]), (cpus, mem, 0, 0))
            self.assertEqual(rec["kubernetes"], {"requests": {"cpu": str(cpus), "memory": "%dMi" % mem}})
            self.assertEqual(o["combined"]["memory_peak_bytes"], max(s["memory_peak_bytes"] for s in summaries))
        # --history 0 and 1; the first run has no history.
        o = json.loads(run_ctl(self.d, "recommend", "mix", "--history", "0", "--json", check=0)[1])
        self.assertEqual([r["id"] for r in o["runs"]], [self.ids[-1]])
        self.assertEqual(o["recommendation"]["memory_mib"], round_memory(memory_peak(summaries[-1]) / MIB * 1.2))
        o = json.loads(run_ctl(self.d, "recommend", "-n", "1", "mix", "--json", check=0)[1])
        self.assertEqual([r["id"] for r in o["runs"]], [self.ids[-1], self.ids[-2]])
        o = json.loads(run_ctl(self.d, "--json", "recommend", str(self.ids[0]), check=0)[1])
        self.assertEqual([r["id"] for r in o["runs"]], [self.ids[0]])
        for args, msg in ((["mix", "--history", "-1"], "recommend: --history '-1': a history is"),
                          (["--json"], "recommend: needs a JOB: a JOB is a job's id or its name"),
                          (["mix", "--jsn"], "recommend: unknown option --jsn"),
                          (["mix", "--format", "csv"], "recommend: --format 'csv': recommend prints text or json")):
            rc, out, err = run_ctl(self.d, "recommend", *args)
            self.assertEqual((rc, out), (2, ""), err)
            self.assertIn(msg, err)


@unittest.skipUnless(CHROMIUM, "chromium is not installed (scripts/setup.d/60-chromium.sh)")
class GpuReport(unittest.TestCase):
    """A job on a host with a GPU (the fake libnvidia-ml.so.1 of the GPU
    tests): the GPU charts drawn, the GPU figures, and GPUs in the
    recommendation and the price request."""

    def test_gpu_charts_and_recommendation(self):
        fake = os.environ.get("RT_FAKE_NVML_DIR")
        if not fake or not os.path.exists(os.path.join(fake, "libnvidia-ml.so.1")):
            self.fail("RT_FAKE_NVML_DIR does not hold the fake libnvidia-ml.so.1")
        tmp = tempfile.mkdtemp(prefix="rt-report-gpu-")
        self.addCleanup(shutil.rmtree, tmp, True)
        job = subprocess.Popen(["sleep", "60"])
        self.addCleanup(lambda: (job.kill(), job.wait()))
        cfg = os.path.join(tmp, "nvml.conf")
        with open(cfg, "w") as f:  # the job uses 30 % of the GPU and 2 GiB of its memory
            f.write("device\nname=NVIDIA H100 80GB HBM3\nuuid=GPU-aaaa\npci=00000000:17:00.0\n"
                    "util=40\nmem_total=%d\nmem_used=%d\n"
                    "process\npid=%d\nvram=%d\nsm=30\nlist=compute\n"
                    % (80 * 1024 * MIB, 3 * 1024 * MIB, job.pid, 2048 * MIB))
        keeper = StandIn(lambda path, q, h: (200, [SERVER], 0))
        self.addCleanup(keeper.close)
        d = Daemon(interval=0.2, env={"LD_LIBRARY_PATH": fake, "FAKE_NVML_CONFIG": cfg,
                                      "RESOURCE_TRACKERD_TEST_IMDS_BASE": "http://127.0.0.1:9",
                                      "RESOURCE_TRACKERD_TEST_ALICLOUD_BASE": "http://127.0.0.1:9"}).start()
        try:
            jid = d.call("StartJob", {"pid": job.pid, "name": "gpu"})["job"]["id"]
            wait_for(lambda: d.call("GetJob", {"id": jid})["job"]["summary"]["samples"] >= 5)
            s = d.call("StopJob", {"id": jid})["job"]["summary"]
            self.assertEqual((s["gpu_peak_usage"], s["gpu_avg_vram_bytes"], s["gpu_peak_vram_bytes"]),
                             (0.3, 2048 * MIB, 2048 * MIB))
            rc, text, err = run_ctl(d, "report", "-o", "-", "gpu", env={"RESOURCE_TRACKER_KEEPER_URL": keeper.url},
                                    check=0)
            found, requests = render(text, tmp)
            self.assertEqual((found["errors"], found["fetched"], requests), ([], [], []))
            charts = found["charts"]
            self.assertEqual(sorted(charts), ["chart-cpu", "chart-disk-io", "chart-disk-space", "chart-gpu",
                                              "chart-gpus", "chart-memory", "chart-network", "chart-vram"])
            for name in ("chart-gpu", "chart-gpus", "chart-vram"):
                self.assertGreater(charts[name]["job"], 20, name)
            for name in ("chart-gpu", "chart-vram"):  # in use: one GPU, the job's, drawn over the host's
                self.assertGreater(charts[name]["host"], 20, name)
            c = Cells(text)
            self.assertEqual(c.value(jid, "gpu_mean"), s["gpu_avg_usage"])
            self.assertEqual(c.value(jid, "gpu_peak"), 0.3)
            self.assertEqual(c.text(jid, "vram_peak_bytes"), "2.00 GiB")
            self.assertIn("<td>1 × NVIDIA H100 80GB HBM3, 80.0 GiB VRAM in all</td>", text)
            # GPUs = max(1, round(0.3)); VRAM = 2048 MiB x 1.2 -> 3072.
            self.assertRegex(c.ids["rec-slurm"][1], r"^--cpus-per-task=1 --mem=128M --gres=gpu:1$")
            self.assertEqual(c.ids["rec-metaflow"][1], "@resources(cpu=1, memory=128, gpu=1)")
            self.assertIn("1 GPU with 3072 MiB VRAM", c.ids["rec-people"][1])
            self.assertEqual(keeper.requests[0][1]["gpu_min"], ["1"])
            self.assertEqual(keeper.requests[0][1]["gpu_memory_total"], ["3.000"])
            d.stop()
        finally:
            d.cleanup()


def probe_host_sample():
    """This machine's host sample, from a daemon started for it."""
    probe = Daemon(interval=1).start()
    try:
        return probe.call("GetHostSample")["sample"]
    finally:
        probe.stop()
        probe.cleanup()


class LongJob(unittest.TestCase):
    """A job of 5000 samples from the store: at most 1000 points per chart,
    its one-sample peak kept; statistics from every sample."""

    def test_downsampled_with_its_peaks(self):
        host = probe_host_sample()
        d = Daemon(interval=1, env={"RESOURCE_TRACKERD_TEST_IMDS_BASE": "http://127.0.0.1:9",
                                    "RESOURCE_TRACKERD_TEST_ALICLOUD_BASE": "http://127.0.0.1:9"})
        try:
            n = 5000
            peaks = synthjob.write_job(d.state_dir, host, n)
            d.start()
            s = d.call("GetJob", {"id": 1})["job"]["summary"]
            self.assertEqual(s["samples"], n)
            rc, text, err = run_ctl(d, "report", "-o", "-", "1", "--no-prices", check=0)
            data = json.loads(re.search(r'<script type="application/json" id="rt-data">(.*?)</script>',
                                        text, re.S).group(1))
            self.assertEqual(len(data["t"]), 1000)
            cores = data["series"]["0"]  # INSIGHT_CORES_JOB
            self.assertEqual(len(cores), 1000)
            self.assertEqual(max(hi for _, _, hi in cores), synthjob.PEAK_CORES)
            self.assertEqual(sum(1 for _, _, hi in cores if hi == synthjob.PEAK_CORES), len(peaks))
            self.assertTrue(all(lo <= mid <= hi for lo, mid, hi in cores))
            self.assertEqual(data["t"], sorted(data["t"]))
            if CHROMIUM:  # 83 minutes: hours and minutes since the start, the clock to the minute
                found, _ = render(text, d.state_dir)
                self.assertEqual(found["errors"], [])
                check_axes(self, found, r"\d:\d\d", r"\d\d:\d\d")
            # The wave's crest, held for minutes: its cores are asked for, not the mean's (the
            # Python rule, said beside it).
            sustained, block, secs = 0, 0, 0
            for c in synthjob.cores(n):
                block, secs = block + c, secs + 1
                if secs == 5:
                    sustained, block, secs = max(sustained, block / secs), 0, 0
            self.assertAlmostEqual(s["sustained_cores"], sustained, places=3)
            rec = json.loads(run_ctl(d, "recommend", "1", "--json", check=0)[1])["recommendation"]
            self.assertEqual((rec["cpus"], rec["cpus_python"]), (math.ceil(sustained - 0.1), round(s["avg_cores"])))
            self.assertGreater(rec["cpus"], rec["cpus_python"])
            self.assertIn("<p id=\"rec-cpu-why\">CPUs: its busiest stretch held %.2f cores; the mean, %.2f "
                          "cores, would give %d vCPUs (the Python tracker&#39;s rule).</p>"
                          % (s["sustained_cores"], s["avg_cores"], rec["cpus_python"]), text)
            c = Cells(text)
            mean = sum(2000 + i // 100 for i in range(n)) / n * MIB
            self.assertEqual(c.value(1, "cores_peak"), s["peak_cores"])
            self.assertEqual(c.value(1, "memory_pss_peak_bytes"), (2000 + (n - 1) // 100) * MIB)
            self.assertEqual(s["avg_pss_bytes"], round(mean))  # rebuilt from the lines
            self.assertEqual(c.value(1, "memory_pss_mean_bytes"), round(mean))
            o = json.loads(run_ctl(d, "recommend", "1", "--json", check=0)[1])
            self.assertEqual(o["recommendation"]["memory_mib"], round_memory((2000 + (n - 1) // 100) * 1.2))
            d.stop()
            # A record from before the summary's means (its totals count every
            # sample, so nothing is rebuilt): the report reads the samples.
            path = os.path.join(d.state_dir, "jobs", "1", "job.json")
            with open(path) as f:
                rec = json.load(f)
            self.assertNotIn("pss_sum_bytes", rec["totals"])
            rec["totals"]["samples"] = n
            with open(path, "w") as f:
                json.dump(rec, f)
            d.start()
            self.assertIsNone(d.call("GetJob", {"id": 1})["job"]["summary"]["avg_pss_bytes"])
            rc, text, err = run_ctl(d, "report", "-o", "-", "1", "--no-prices", check=0)
            self.assertAlmostEqual(Cells(text).value(1, "memory_pss_mean_bytes"), mean, delta=1e-3)
            o = json.loads(run_ctl(d, "recommend", "1", "--json", check=0)[1])
            self.assertAlmostEqual(o["runs"][0]["memory_pss_mean_bytes"], mean, delta=1e-3)
            d.stop()
        finally:
            d.cleanup()

    def test_a_long_series_lets_other_clients_in(self):
        """GetJobSeries reads a long job in steps: a Ping sent after it is
        answered before it, the loop serving others between the steps."""
        host = probe_host_sample()
        d = Daemon(interval=1)
        try:
            synthjob.write_job(d.state_dir, host, 40000)
            d.start()
            a, b = socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)
            for s in (a, b):
                s.connect(d.socket)
            series = json.dumps({"method": IFACE + ".GetJobSeries", "parameters": {"id": 1}}).encode() + b"\0"
            a.sendall(series)
            b.sendall(json.dumps({"method": IFACE + ".Ping"}).encode() + b"\0")
            self.assertEqual(json.loads(b.recv(4096).rstrip(b"\0")), {"parameters": {}})
            self.assertEqual(select.select([a], [], [], 0)[0], [], "the series was answered first")
            reply = b""
            while not reply.endswith(b"\0"):
                reply += a.recv(1 << 20)
            got = json.loads(reply[:-1])["parameters"]
            self.assertEqual((got["samples"], len(got["time"])), (40000, 1000))
            a.close()
            b.close()
            d.stop()
        finally:
            d.cleanup()


if __name__ == "__main__":
    unittest.main()
