"""Cloud discovery against a fake metadata service on 127.0.0.1.

rt_cloudprobe runs the real discovery code with its endpoints pointed at
local servers that impersonate the vendors' metadata services; every test
asserts the exact cloud_* fields and, where it matters, the requests sent
and the time taken (bounds are generous: the machine may be loaded).
"""
import json
import os
import socket
import subprocess
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOOL = os.path.join(os.environ.get("RT_TOOLS_DIR", "build-asan/tests/tools"), "rt_cloudprobe")
NULLS = {k: None for k in ("cloud_vendor_id", "cloud_account_id", "cloud_region_id",
                           "cloud_zone_id", "cloud_instance_type")}
SLACK_MS = 1500  # scheduling slack on a loaded machine, on top of a bound


def cloud(vendor, account=None, region=None, zone=None, itype=None):
    return {"cloud_vendor_id": vendor, "cloud_account_id": account, "cloud_region_id": region,
            "cloud_zone_id": zone, "cloud_instance_type": itype}


# Each vendor: handle(method, path, headers) -> (status, body, headers) or
# None when the path is not one of its own. Bodies mimic the real services.

def text(body, status=200, headers=None):
    return status, body, headers or {}


def aws(imdsv2=True, imdsv1=True, token="AQAEAFake-Token==", delays=None):
    delays = delays or {}
    values = {
        "/latest/meta-data/": "ami-id\ninstance-type\nplacement/\nservices/\n",
        "/latest/meta-data/services/domain": "amazonaws.com",
        "/latest/meta-data/placement/region": "eu-west-1",
        "/latest/meta-data/placement/availability-zone": "eu-west-1b",
        "/latest/meta-data/instance-type": "t3.micro",
        # The real service pretty-prints this document.
        "/latest/meta-data/identity-credentials/ec2/info":
            '{\n  "Code" : "Success",\n  "LastUpdated" : "2024-05-01T10:00:00Z",\n'
            '  "AccountId" : "123456789012"\n}',
    }

    def handle(method, path, headers):
        if path == "/latest/api/token":
            if method != "PUT":
                return text("", 405)
            if not imdsv2:
                return text("", 403)
            if headers.get("X-aws-ec2-metadata-token-ttl-seconds") != "21600":
                return text("missing ttl", 400)
            return text(token)
        if path not in values:
            return None
        time.sleep(delays.get(path, 0))
        sent = headers.get("X-aws-ec2-metadata-token")
        if sent is not None and sent != token:
            return text("", 401)
        if sent is None and not imdsv1:
            return text("", 401)
        return text(values[path])
    return handle


def gcp(flavor_header=True):
    values = {
        "/computeMetadata/v1/instance/machine-type": "projects/123456789/machineTypes/n2-standard-8",
        "/computeMetadata/v1/instance/zone": "projects/123456789/zones/europe-west4-b",
    }

    def handle(method, path, headers):
        if path not in values:
            return None
        if headers.get("Metadata-Flavor") != "Google":
            return text("Missing Metadata-Flavor:Google header.", 403)
        return text(values[path], headers={"Metadata-Flavor": "Google"} if flavor_header else {})
    return handle


def azure():
    doc = {"compute": {"location": "westeurope", "vmSize": "Standard_D4s_v5", "zone": "2",
                       "name": "vm1", "subscriptionId": "00000000-1111-2222-3333-444444444444"},
           "network": {"interface": []}}

    def handle(method, path, headers):
        if path != "/metadata/instance?api-version=2021-02-01":
            return None
        if headers.get("Metadata") != "true":
            return text('{"error": "Bad request. Required metadata header not specified"}', 400)
        return text(json.dumps(doc))
    return handle


def hetzner():
    body = ("availability-zone: fsn1-dc14\nhostname: worker-1\ninstance-id: 12345678\n"
            "local-ipv4: ''\npublic-ipv4: 203.0.113.7\nregion: eu-central\n")

    def handle(method, path, headers):
        return text(body) if path == "/hetzner/v1/metadata" else None
    return handle


def upcloud():
    doc = {"cloud_name": "upcloud", "instance_id": "00a1b2c3-d4e5", "region": "fi-hel1"}

    def handle(method, path, headers):
        return text(json.dumps(doc)) if path == "/metadata/v1.json" else None
    return handle


def vultr():
    doc = {"bgp": {}, "hostname": "vultr-1", "instanceid": "a747bfz6385e",
           "instance-v2-id": "6ab2c2ac-0b2c-4c5a-9c4e-5a4e1f0b0b0b",
           "region": {"regioncode": "AMS", "countrycode": "NL"}}

    def handle(method, path, headers):
        return text(json.dumps(doc)) if path == "/v1.json" else None
    return handle


def ovh():
    network = {"links": [], "networks": [],
               "services": [{"type": "dns", "address": "213.186.33.99"},
                            {"type": "dns", "address": "2001:41d0:3:163::1"}]}
    meta = {"uuid": "f1e2", "availability_zone": "gra11", "hostname": "ovh-1"}
    values = {
        "/openstack/latest/network_data.json": json.dumps(network),
        "/openstack/latest/meta_data.json": json.dumps(meta),
        # OpenStack's EC2-compatible tree: AWS must not claim it.
        "/latest/meta-data/": "instance-type\nplacement/\n",
        "/latest/meta-data/instance-type": "b3-8",
        "/latest/meta-data/placement/availability-zone": "nova",
    }

    def handle(method, path, headers):
        return text(values[path]) if path in values and method == "GET" else None
    return handle


def openstack_not_ovh():
    inner = ovh()

    def handle(method, path, headers):
        if path == "/openstack/latest/network_data.json":
            return text(json.dumps({"services": [{"type": "dns", "address": "8.8.8.8"}]}))
        return inner(method, path, headers)
    return handle


def alicloud(imdsv2=True, token="ali-token-1"):
    values = {
        "/latest/meta-data/": "instance/\nregion-id\nzone-id\n",
        "/latest/meta-data/instance/instance-type": "ecs.g7.large",
        "/latest/meta-data/region-id": "cn-hangzhou",
    }

    def handle(method, path, headers):
        if path == "/latest/api/token" and method == "PUT":
            if not imdsv2:
                return text("", 404)
            if headers.get("X-aliyun-ecs-metadata-token-ttl-seconds") != "21600":
                return text("", 400)
            return text(token)
        if path not in values:
            return None
        sent = headers.get("X-aliyun-ecs-metadata-token")
        if imdsv2 and sent != token:
            return text("", 401)
        return text(values[path])
    return handle


class Handler(BaseHTTPRequestHandler):
    def _serve(self):
        method, path = self.command, self.path
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.server.log.append((method, path, dict(self.headers)))
        reply = None
        for vendor in self.server.vendors:
            reply = vendor(method, path, self.headers)
            if reply is not None:
                break
        status, body, headers = reply or text("not found", 404)
        data = body.encode()
        try:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client gave up (timeout): expected in some tests

    do_GET = do_PUT = _serve

    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # all probes connect at once; the default 5 drops SYNs


class FakeServer:
    def __init__(self, *vendors):
        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.vendors = list(vendors)
        self.httpd.log = []
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.httpd.server_address[1]

    @property
    def log(self):
        return self.httpd.log

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class BlackHole:
    """Completes TCP handshakes (kernel backlog) but never reads or answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]

    def close(self):
        self.sock.close()


def thread_count(pid):
    try:
        return len(os.listdir("/proc/%d/task" % pid))
    except FileNotFoundError:
        return 0


def probe_full(imds, ali, *extra, env=None, expect_rc=0, sample_threads=False):
    """Run the tool; returns (cloud JSON, timing dict, most threads seen)."""
    cmd = [TOOL, "--imds", imds, "--alicloud", ali, *extra]
    full_env = dict(os.environ, **(env or {}))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=full_env)
    threads = 0
    if sample_threads:
        # While discovery runs (not at exit, where LeakSanitizer adds a task).
        t0 = time.monotonic()
        while p.poll() is None and time.monotonic() - t0 < 1.5:
            if time.monotonic() - t0 > 0.2:
                threads = max(threads, thread_count(p.pid))
            time.sleep(0.01)
    out, err = p.communicate(timeout=60)
    if p.returncode != expect_rc:
        raise AssertionError("%s exited %d: %s" % (cmd, p.returncode, err))
    timing = [l for l in err.splitlines() if l.startswith("timing:")][0]
    fields = {k: float(v) for k, v in (kv.split("=") for kv in timing.split()[1:])}
    return json.loads(out), fields, threads


def probe(imds, ali, *extra, env=None):
    result, t, _ = probe_full(imds, ali, *extra, env=env)
    return result, t["start_ms"], t["discovery_ms"]


class CloudDiscovery(unittest.TestCase):
    def setUp(self):
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.close()

    def serve(self, *vendors):
        s = FakeServer(*vendors)
        self.servers.append(s)
        return s

    def run_probe(self, vendors, ali_vendors=(), *extra, **kw):
        imds = self.serve(*vendors)
        ali = self.serve(*ali_vendors)
        result, start_ms, discovery_ms = probe(imds.url, ali.url, *extra, **kw)
        return result, imds, ali, start_ms, discovery_ms

    def test_aws_imdsv2(self):
        result, imds, _, start_ms, _ = self.run_probe([aws()])
        self.assertEqual(result, cloud("aws", "123456789012", "eu-west-1", "eu-west-1b", "t3.micro"))
        self.assertLess(start_ms, 500, "start must return at once")
        token_put = [h for m, p, h in imds.log if m == "PUT" and p == "/latest/api/token"]
        self.assertEqual(len(token_put), 1)
        self.assertEqual(token_put[0]["X-aws-ec2-metadata-token-ttl-seconds"], "21600")
        reads = [h for m, p, h in imds.log if p.startswith("/latest/meta-data/")]
        self.assertEqual(len(reads), 5)  # domain, region, zone, type, account
        for h in reads:
            self.assertEqual(h.get("X-aws-ec2-metadata-token"), "AQAEAFake-Token==")

    def test_aws_imdsv1_fallback(self):
        result, imds, _, _, _ = self.run_probe([aws(imdsv2=False)])
        self.assertEqual(result, cloud("aws", "123456789012", "eu-west-1", "eu-west-1b", "t3.micro"))
        paths = [p for m, p, h in imds.log if m == "GET" and p.startswith("/latest/")]
        self.assertIn("/latest/meta-data/", paths)
        for m, p, h in imds.log:
            self.assertNotIn("X-aws-ec2-metadata-token", h)

    def test_aws_imdsv2_only_rejects_without_token_but_we_send_it(self):
        result, _, _, _, _ = self.run_probe([aws(imdsv1=False)])
        self.assertEqual(result["cloud_vendor_id"], "aws")
        self.assertEqual(result["cloud_instance_type"], "t3.micro")

    def test_gcp(self):
        result, imds, _, _, _ = self.run_probe([gcp()])
        self.assertEqual(result, cloud("gcp", None, "europe-west4", "europe-west4-b", "n2-standard-8"))
        gets = [h for m, p, h in imds.log if p.startswith("/computeMetadata/")]
        self.assertEqual(len(gets), 2)
        for h in gets:
            self.assertEqual(h.get("Metadata-Flavor"), "Google")

    def test_gcp_impostor_without_flavor_header(self):
        result, _, _, _, _ = self.run_probe([gcp(flavor_header=False)])
        self.assertEqual(result, NULLS)

    def test_azure(self):
        result, imds, _, _, _ = self.run_probe([azure()])
        self.assertEqual(result, cloud("azure", None, "westeurope", "2", "Standard_D4s_v5"))

    def test_hetzner(self):
        result, _, _, _, _ = self.run_probe([hetzner()])
        self.assertEqual(result, cloud("hcloud", None, "eu-central", "fsn1-dc14", None))

    def test_upcloud(self):
        result, _, _, _, _ = self.run_probe([upcloud()])
        self.assertEqual(result, cloud("upcloud", None, "fi-hel1", None, None))

    def test_vultr(self):
        result, _, _, _, _ = self.run_probe([vultr()])
        self.assertEqual(result, cloud("vultr", None, "AMS", None, None))

    def test_alicloud_imdsv2_and_v1(self):
        for v2 in (True, False):
            with self.subTest(imdsv2=v2):
                result, _, ali, _, _ = self.run_probe([], [alicloud(imdsv2=v2)])
                self.assertEqual(result, cloud("alicloud", None, "cn-hangzhou", None, "ecs.g7.large"))

    def test_ovh_not_taken_for_aws(self):
        result, imds, _, _, _ = self.run_probe([ovh()])
        self.assertEqual(result, cloud("ovh", None, "gra11", None, "b3-8"))
        # The AWS probe reached the EC2-compatible tree and was turned away
        # by services/domain.
        self.assertIn("/latest/meta-data/services/domain", [p for m, p, h in imds.log])

    def test_openstack_without_ovh_dns_is_no_cloud(self):
        result, _, _, _, _ = self.run_probe([openstack_not_ovh()])
        self.assertEqual(result, NULLS)

    def test_precedence(self):
        cases = [
            ([aws(), azure()], [], "aws"),
            ([azure(), gcp()], [], "gcp"),
            ([vultr(), hetzner()], [], "hcloud"),
            ([hetzner(), upcloud()], [], "hcloud"),
            ([upcloud(), vultr()], [], "upcloud"),
            ([ovh()], [alicloud()], "alicloud"),
            ([vultr(), ovh()], [], "vultr"),
        ]
        for vendors, ali_vendors, want in cases:
            with self.subTest(want=want):
                result, _, _, _, _ = self.run_probe(vendors, ali_vendors)
                self.assertEqual(result["cloud_vendor_id"], want)

    def test_slow_higher_precedence_vendor_is_awaited(self):
        # AWS answers 0.4 s late but still within its timeouts; Hetzner at once.
        slow = {p: 0.4 for p in ("/latest/meta-data/services/domain",)}
        result, _, _, _, _ = self.run_probe([aws(delays=slow), hetzner()])
        self.assertEqual(result["cloud_vendor_id"], "aws")

    def test_response_timeout_drops_only_that_field(self):
        # instance-type answers after 1.5 s: past the 1 s response timeout.
        slow = {"/latest/meta-data/instance-type": 1.5}
        result, _, _, _, discovery_ms = self.run_probe([aws(delays=slow)])
        self.assertEqual(result, cloud("aws", "123456789012", "eu-west-1", "eu-west-1b", None))
        self.assertLess(discovery_ms, 1500 + SLACK_MS)

    def test_total_deadline_keeps_confirmed_vendor(self):
        # The zone hangs; with a long response timeout only the 2 s total
        # deadline ends the probe: AWS stays, with what it had by then.
        slow = {"/latest/meta-data/placement/availability-zone": 30}
        result, _, _, _, discovery_ms = self.run_probe(
            [aws(delays=slow)], [], "--response-ms", "20000", "--total-ms", "2000")
        self.assertEqual(result, cloud("aws", None, "eu-west-1", None, None))
        self.assertGreaterEqual(discovery_ms, 1900)
        self.assertLess(discovery_ms, 2000 + SLACK_MS)

    def test_no_cloud_404_everywhere(self):
        result, imds, ali, _, discovery_ms = self.run_probe([], [])
        self.assertEqual(result, NULLS)
        self.assertLess(discovery_ms, 3000 + SLACK_MS)
        self.assertTrue(imds.log and ali.log)

    def test_black_hole_finishes_within_bound(self):
        hole = BlackHole()
        self.servers.append(hole)
        result, t, threads = probe_full(hole.url, hole.url, sample_threads=True)
        self.assertEqual(result, NULLS)
        self.assertLess(t["start_ms"], 500)
        self.assertLess(t["discovery_ms"], 3000 + SLACK_MS)
        # One discovery thread for all vendors, no resolver threads.
        self.assertEqual(threads, 2)

    def test_free_cancels_promptly(self):
        hole = BlackHole()
        self.servers.append(hole)
        result, t, _ = probe_full(hole.url, hole.url, "--cancel-ms", "300", expect_rc=3)
        self.assertEqual(result, NULLS)
        self.assertLess(t["free_ms"], 500)

    def test_proxy_environment_is_ignored(self):
        env = {"http_proxy": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
               "ALL_PROXY": "http://127.0.0.1:9", "no_proxy": ""}
        result, _, _, _, _ = self.run_probe([azure()], [], env=env)
        self.assertEqual(result["cloud_vendor_id"], "azure")

    def test_disabled_sends_nothing(self):
        result, imds, ali, _, discovery_ms = self.run_probe([aws()], [], "--disable")
        self.assertEqual(result, NULLS)
        self.assertEqual(imds.log, [])
        self.assertEqual(ali.log, [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
