"""Ceph radosgw on 127.0.0.1: a real S3 server that checks SigV4 signatures.

One mon, one memstore OSD (RAM) and radosgw, auth none between the daemons and
normal S3 user authentication (recipe: shared/reference/test-environment.md §3).
All ports are picked free, so two test programs can each run one.

    with Radosgw() as rgw:           # ~12 s bootstrap, torn down on exit
        rgw.client(rgw.keys[0]).put_bucket("b")

Reuse across test runs while developing:
    python3 tests/upload/rgw.py up /tmp/rgw     # prints the state, leaves it running
    RT_RGW_STATE=/tmp/rgw/state.json ctest -R upload
    python3 tests/upload/rgw.py down /tmp/rgw
Packages: scripts/setup.d/50-radosgw.sh.
"""
import datetime
import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

KEYS = [("AKIDTEST1", "SECRETTEST1"), ("AKIDTEST2", "SECRETTEST2")]
REGION = "us-east-1"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _conf(d, fsid, mon2, mon1, rgw):
    return f"""[global]
fsid = {fsid}
mon host = [v2:127.0.0.1:{mon2},v1:127.0.0.1:{mon1}]
public addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc secure
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
mon max pg per osd = 1000
mon allow pool size one = true
osd crush chooseleaf type = 0
run dir = {d}/run
admin socket = {d}/run/$name.asok
log file = {d}/log/$name.log
pid file = {d}/run/$name.pid
[mon.a]
mon data = {d}/mon.a
[osd.0]
osd data = {d}/osd.0
osd objectstore = memstore
memstore device bytes = 268435456
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:{rgw}
rgw data = {d}/rgw.a
"""


class Radosgw:
    def __init__(self, workdir=None):
        self.owned = workdir is None
        self.dir = workdir
        self.endpoint = None
        self.keys = KEYS
        self.region = REGION
        self.reused = False

    def __enter__(self):
        state = os.environ.get("RT_RGW_STATE")
        if state:
            with open(state) as f:
                st = json.load(f)
            self.dir, self.endpoint, self.reused = st["dir"], st["endpoint"], True
            return self
        self.start()
        return self

    def __exit__(self, *exc):
        if not self.reused:
            self.stop()

    def _run(self, *args, timeout=60):
        return subprocess.run(list(args), check=True, timeout=timeout, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True).stdout

    def start(self):
        try:
            self._start()
        except BaseException:
            self.stop()  # no half-started daemons left behind
            raise

    def _start(self):
        for tool in ("ceph-mon", "ceph-osd", "radosgw", "radosgw-admin", "ceph"):
            if not shutil.which(tool):
                raise RuntimeError(f"{tool} missing: run scripts/setup.d/50-radosgw.sh")
        if self.dir is None:
            self.dir = tempfile.mkdtemp(prefix="rt-rgw-")
        d = self.dir
        for sub in ("run", "log", "mon.a", "osd.0", "rgw.a"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        fsid = str(uuid.uuid4())
        mon2, mon1, port = free_port(), free_port(), free_port()
        conf = os.path.join(d, "ceph.conf")
        with open(conf, "w") as f:
            f.write(_conf(d, fsid, mon2, mon1, port))
        c = ["-c", conf]
        self._run("ceph-authtool", "--create-keyring", f"{d}/mon.keyring", "--gen-key", "-n", "mon.",
                  "--cap", "mon", "allow *")
        self._run("monmaptool", "--create", "--addv", "a", f"[v2:127.0.0.1:{mon2},v1:127.0.0.1:{mon1}]",
                  "--fsid", fsid, f"{d}/monmap")
        self._run("ceph-mon", *c, "--mkfs", "-i", "a", "--monmap", f"{d}/monmap", "--keyring", f"{d}/mon.keyring")
        self._run("ceph-mon", *c, "-i", "a")
        osd_uuid = str(uuid.uuid4())
        osd_id = self._run("ceph", *c, "osd", "new", osd_uuid, timeout=60).strip()
        self._run("ceph-osd", *c, "-i", osd_id, "--mkfs", "--osd-uuid", osd_uuid)
        self._run("ceph-osd", *c, "-i", osd_id)
        self._run("radosgw", *c, "-n", "client.rgw.a", "--client_mount_timeout=60")
        self.endpoint = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/", timeout=2).close()
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("radosgw did not come up; logs in " + d)
                time.sleep(0.3)
        (ak, sk), (ak2, sk2) = self.keys
        self._run("radosgw-admin", *c, "user", "create", "--uid=tester", "--display-name=Tester",
                  f"--access-key={ak}", f"--secret-key={sk}", timeout=60)
        self.add_key(ak2, sk2)
        with open(os.path.join(d, "state.json"), "w") as f:
            json.dump({"dir": d, "endpoint": self.endpoint}, f)

    def add_key(self, ak, sk):
        self._run("radosgw-admin", "-c", f"{self.dir}/ceph.conf", "key", "create", "--uid=tester",
                  "--key-type=s3", f"--access-key={ak}", f"--secret-key={sk}", timeout=60)

    def remove_key(self, ak):
        self._run("radosgw-admin", "-c", f"{self.dir}/ceph.conf", "key", "rm", "--uid=tester",
                  "--key-type=s3", f"--access-key={ak}", timeout=60)

    def stop(self):
        if self.dir is None:
            return
        run = os.path.join(self.dir, "run")
        pids = []
        if os.path.isdir(run):
            for name in os.listdir(run):
                if name.endswith(".pid"):
                    try:
                        with open(os.path.join(run, name)) as f:
                            pids.append(int(f.read().strip()))
                    except (OSError, ValueError):
                        pass
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 15
        for pid in pids:
            while time.monotonic() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self.owned:
            shutil.rmtree(self.dir, ignore_errors=True)

    def client(self, key):
        return S3Client(self.endpoint, key[0], key[1], self.region)


def _sign(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


class S3Client:
    """Minimal path-style SigV4 client (stdlib only) to create buckets and read objects back."""

    def __init__(self, endpoint, ak, sk, region):
        self.endpoint, self.ak, self.sk, self.region = endpoint, ak, sk, region
        self.host = urllib.parse.urlparse(endpoint).netloc

    def request(self, method, path, query=None, body=b""):
        now = datetime.datetime.now(datetime.timezone.utc)
        amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        payload = hashlib.sha256(body).hexdigest()
        qs = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                      for k, v in sorted((query or {}).items()))
        cpath = urllib.parse.quote(path, safe="/-_.~")
        headers = {"host": self.host, "x-amz-content-sha256": payload, "x-amz-date": amz_date}
        signed = ";".join(sorted(headers))
        canonical = "\n".join([method, cpath, qs] + [f"{k}:{headers[k]}" for k in sorted(headers)]
                              + ["", signed, payload])
        scope = f"{day}/{self.region}/s3/aws4_request"
        sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        k = _sign(_sign(_sign(_sign(("AWS4" + self.sk).encode(), day), self.region), "s3"), "aws4_request")
        sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
        req = urllib.request.Request(self.endpoint + cpath + ("?" + qs if qs else ""), data=body or None,
                                     method=method)
        for k2, v in headers.items():
            if k2 != "host":
                req.add_header(k2, v)
        req.add_header("Authorization", f"AWS4-HMAC-SHA256 Credential={self.ak}/{scope}, "
                       f"SignedHeaders={signed}, Signature={sig}")
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.read()

    def put_bucket(self, bucket):
        self.request("PUT", f"/{bucket}")

    def list_keys(self, bucket, prefix=""):
        import xml.etree.ElementTree as ET
        keys, token = [], None
        while True:
            q = {"list-type": "2", "prefix": prefix}
            if token:
                q["continuation-token"] = token
            root = ET.fromstring(self.request("GET", f"/{bucket}", q))
            ns = root.tag[:root.tag.index("}") + 1] if root.tag.startswith("{") else ""
            keys += [c.find(ns + "Key").text for c in root.findall(ns + "Contents")]
            token_el = root.find(ns + "NextContinuationToken")
            if token_el is None or not token_el.text:
                return sorted(keys)
            token = token_el.text

    def get(self, bucket, key):
        return self.request("GET", f"/{bucket}/{key}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "up":
        os.makedirs(sys.argv[2], exist_ok=True)
        r = Radosgw(sys.argv[2])
        r.owned = False
        r.start()
        print(json.dumps({"dir": r.dir, "endpoint": r.endpoint, "keys": r.keys}))
    elif len(sys.argv) == 3 and sys.argv[1] == "down":
        r = Radosgw(sys.argv[2])
        r.owned = False
        r.stop()
    else:
        sys.exit("usage: rgw.py up|down DIR")
