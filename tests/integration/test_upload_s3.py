"""Upload worker against a real SigV4-checking S3 (Ceph radosgw on 127.0.0.1)
and a Sentinel API stand-in: objects read back equal the rows fed, and
outages, restarts, expiring or wrong credentials lose nothing.

One radosgw for the whole file (~12 s to bootstrap). S3 traffic goes through
a byte-transparent proxy (signatures still verify) that records request heads
and plays S3 down; the stand-in plays the API down."""
import json
import os
import shutil
import stat
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.environ.get("RT_SOURCE_DIR", "."), "tests", "upload"))
from harness import HEADER, Driver, make_rows, object_rows, wait_until  # noqa: E402
from rgw import Radosgw  # noqa: E402
from standin import S3Proxy, SentinelStandin  # noqa: E402

BUCKET = "rt-upload"
TOKEN = "tok-SECRET-0123456789"
FIELDS = {"job_name": "train", "project_name": "demo", "pid": 4242, "bogus": 1,
          "command": ["python3", "train.py", "--lr=0.1"], "tags": ["team=ml", "gpu=a100"],
          "host_id": "h-1", "host_vcpus": 2, "host_memory_mib": 23000, "cloud_vendor_id": None}
RGW = PROXY = S3 = None
KEY1 = KEY2 = None


def setUpModule():
    global RGW, PROXY, S3, KEY1, KEY2
    RGW = Radosgw().__enter__()
    KEY1, KEY2 = RGW.keys
    S3 = RGW.client(KEY1)
    try:
        S3.put_bucket(BUCKET)
    except Exception:  # already there when a running radosgw is reused
        pass
    host, port = RGW.endpoint.split("//")[1].split(":")
    PROXY = S3Proxy((host, int(port)))


def tearDownModule():
    if PROXY:
        PROXY.close()
    if RGW:
        RGW.__exit__(None, None, None)


class UploadTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-upload-")
        self.spool = os.path.join(self.tmp, "spool")
        self.prefix = f"tenant=acme/{self._testMethodName}-{int(time.time() * 1000)}"
        self.api = SentinelStandin(TOKEN, BUCKET, [KEY1], prefix=self.prefix)
        PROXY.fail = None
        self.drivers = []

    def tearDown(self):
        PROXY.fail = None
        for d in self.drivers:
            if d.proc.poll() is None:
                d.kill()
        self.api.close()
        self.assertEqual(self.api.violations, [], "the API stand-in saw requests the live API rejects")
        shutil.rmtree(self.tmp, ignore_errors=True)

    def driver(self, **opts):
        base = dict(interval_ms=300, backoff_base_ms=50, backoff_max_ms=400, timeout_ms=5000,
                    s3_endpoint=PROXY.url, s3_region=RGW.region, log_level="debug")
        base.update(opts)
        d = Driver(self.spool, self.api.url, os.path.join(self.tmp, "driver.log"), **base)
        self.drivers.append(d)
        return d

    def quit(self, d):
        self.assertEqual(d.quit(), 0, "driver exit status (sanitizer report?): see " + d.log_path)
        log = d.log_text()
        for secret in (TOKEN, KEY1[1], KEY2[1], "sts-token-"):
            self.assertNotIn(secret, log, "a secret was logged")

    def wait_finished(self, n=1, timeout=60):
        return wait_until(lambda: len(self.api.finishes()) >= n and self.api.finishes(), timeout,
                          f"{n} runs finished")

    def delivered(self, run_id):
        """(keys, rows) of a run's objects in S3, checking the header of each."""
        keys = S3.list_keys(BUCKET, f"{self.prefix}/{run_id}/")
        rows = []
        for k in keys:
            header, r = object_rows(S3.get(BUCKET, k))
            self.assertEqual(header, HEADER, f"header of {k}")
            rows += r
        return keys, rows

    def check_run(self, run_id, rows, exit_code=0):
        keys, got = self.delivered(run_id)
        self.assertEqual(keys, [f"{self.prefix}/{run_id}/{i:06d}.csv.gz" for i in range(len(keys))])
        self.assertEqual(got, rows, "rows in S3 differ from the rows fed")
        fin = self.api.runs[run_id]["finish"]
        self.assertEqual(len(fin), 1, "exactly one accepted /finish")
        self.assertEqual(fin[0]["data_source"], "s3")
        self.assertEqual(fin[0]["data_uris"], [f"s3://{BUCKET}/{k}" for k in keys])
        self.assertEqual(fin[0]["exit_code"], exit_code)
        return keys

    def my_puts(self, run_id):
        """PUT request heads of this test's run (run ids repeat across stand-ins)."""
        seg = self.prefix.split("/")[1] + "/" + run_id.replace(":", "%3A") + "/"
        return [p for p in PROXY.puts() if seg in p["path"]]

    def spool_files(self):
        out = []
        for root, _, files in os.walk(self.spool):
            out += [os.path.join(root, f) for f in files]
        return sorted(out)

    # ------------------------------------------------------------------
    def test_roundtrip(self):
        d = self.driver()
        self.assertEqual(d.begin(1, TOKEN, FIELDS), {"rc": 0})
        rows = make_rows(1, 40)
        d.rows(1, rows[:20], pace=0.03)
        # Spool permissions while the job runs: 0700 directories, 0600 files.
        self.assertEqual(stat.S_IMODE(os.stat(self.spool).st_mode), 0o700)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.spool, "1")).st_mode), 0o700)
        files = self.spool_files()
        self.assertIn(os.path.join(self.spool, "1", "meta.json"), files)
        for f in files:
            self.assertEqual(stat.S_IMODE(os.stat(f).st_mode), 0o600, f)
        d.rows(1, rows[20:], pace=0.03)
        d.end(1, 3)
        fin = self.wait_finished()
        (run_id,) = fin.keys()
        keys = self.check_run(run_id, rows, exit_code=3)
        self.assertGreaterEqual(len(keys), 3, "rows were cut into batches every interval")
        self.assertEqual(fin[run_id][0]["run_status"], "failed")
        # POST /runs: pid and unknown keys dropped, command a JSON string, host/cloud present.
        start = self.api.runs[run_id]["start"]
        self.assertEqual(list(start)[:4], ["job_name", "project_name", "tags", "command"])
        self.assertEqual(json.loads(start["command"]), ["python3", "train.py", "--lr=0.1"])
        self.assertEqual(start["tags"], {"team": "ml", "gpu": "a100"})
        self.assertEqual((start["host_id"], start["host_vcpus"], start["host_gpu_model"]), ("h-1", 2, None))
        # S3 PUTs: path-style, key percent-encoded, gzip content type, signed STS token.
        mine = self.my_puts(run_id)
        self.assertEqual(len(mine), len(keys))
        token = self.api.runs[run_id]["creds"][0]["session_token"]
        for p in mine:
            self.assertTrue(p["path"].startswith(f"/{BUCKET}/tenant%3Dacme/"), p["path"])
            h = p["headers"]
            self.assertEqual(h["content-type"], "application/gzip")
            self.assertNotIn("content-encoding", h)
            self.assertEqual(h["x-amz-security-token"], token)
            self.assertRegex(h["x-amz-content-sha256"], "^[0-9a-f]{64}$")
            self.assertRegex(h["authorization"], r"^AWS4-HMAC-SHA256 Credential=AKIDTEST1/\d{8}/us-east-1/s3/"
                             r"aws4_request, SignedHeaders=[^,]*x-amz-content-sha256;x-amz-date;"
                             r"x-amz-security-token")
        st = wait_until(lambda: (lambda s: s["finished"] and s)(d.status(1)), 30, "job done")
        self.assertEqual((st["finished"], st["sent"], st["pending"], st["run_id"]), (True, len(keys), 0, run_id))
        self.assertEqual(os.listdir(self.spool), [], "the spool is empty once the run is finished")
        self.quit(d)

    def test_wrong_secret_then_fixed(self):
        self.api.keys = self.api.refresh_keys = [(KEY1[0], "not-the-secret")]
        d = self.driver()
        d.begin(1, TOKEN, FIELDS)
        rows = make_rows(2, 30)
        d.rows(1, rows[:15], pace=0.02)
        st = wait_until(lambda: (lambda s: s["failures"] >= 2 and s)(d.status(1)), 30, "403s")
        self.assertIn("SignatureDoesNotMatch", st["last_error"])
        self.assertEqual(st["sent"], 0)
        self.api.refresh_keys = [KEY1]  # a 403 makes the worker ask for new credentials
        d.rows(1, rows[15:], pace=0.02)
        d.end(1)
        fin = self.wait_finished()
        (run_id,) = fin.keys()
        self.check_run(run_id, rows)
        self.assertGreaterEqual(self.api.runs[run_id]["refreshes"], 1)
        self.quit(d)

    def test_api_and_s3_outages(self):
        self.api.fail = "close"
        d = self.driver()
        d.begin(1, TOKEN, FIELDS)
        rows = make_rows(3, 60)
        d.rows(1, rows[:15], pace=0.03)
        wait_until(lambda: d.status(1)["failures"] >= 2, 30, "POST /runs failures")
        self.api.fail = 503
        d.rows(1, rows[15:20], pace=0.03)
        self.api.fail = None
        wait_until(lambda: d.status(1)["run_id"], 30, "the run to start")
        PROXY.fail = "close"
        d.rows(1, rows[20:35], pace=0.03)
        st = wait_until(lambda: (lambda s: s["failures"] >= 2 and s)(d.status(1)), 30, "S3 failures")
        self.assertIn("upload", st["last_error"])
        PROXY.fail = 503
        d.rows(1, rows[35:45], pace=0.03)
        PROXY.fail = None
        self.api.fail = ("slow", 1.0)
        d.rows(1, rows[45:], pace=0.03)
        d.end(1)
        self.api.fail = None
        fin = self.wait_finished()
        self.assertEqual(len(self.api.runs), 1, "one run, whatever the retries")
        (run_id,) = fin.keys()
        self.check_run(run_id, rows)
        self.assertIn("recovered", d.log_text())
        self.quit(d)

    def test_sigkill_with_pending_batches(self):
        PROXY.fail = "close"
        d = self.driver()
        d.begin(1, TOKEN, FIELDS)
        rows = make_rows(4, 20)
        d.rows(1, rows, pace=0.04)
        d.end(1)
        wait_until(lambda: (lambda s: s["ended"] and s["failures"] >= 1 and s["pending"] >= 2)(d.status(1)),
                   30, "pending batches")
        d.kill()
        batches = [f for f in self.spool_files() if f.endswith(".csv.gz")]
        self.assertGreaterEqual(len(batches), 2)
        PROXY.fail = None
        d2 = self.driver()
        self.assertEqual(d2.cmd("resumed"), [], "an ended job is not reported as running")
        fin = self.wait_finished()
        (run_id,) = fin.keys()
        self.check_run(run_id, rows)
        self.quit(d2)

    def test_sigkill_mid_job_resumes(self):
        d = self.driver(interval_ms=400)
        d.begin(7, TOKEN, FIELDS)
        rows = make_rows(5, 30)
        d.rows(7, rows[:12], pace=0.05)
        wait_until(lambda: d.status(7)["sent"] >= 1, 30, "a first upload")
        d.rows(7, rows[12:20])  # still in the open rows file when killed
        d.kill()
        d2 = self.driver(interval_ms=400)
        self.assertEqual(d2.cmd("resumed"), [7])
        self.assertEqual(d2.begin(7, TOKEN, FIELDS), {"rc": 0})
        d2.rows(7, rows[20:], pace=0.02)
        d2.end(7)
        fin = self.wait_finished()
        self.assertEqual(len(self.api.runs), 1, "the resumed job keeps its run")
        (run_id,) = fin.keys()
        self.check_run(run_id, rows)
        self.quit(d2)

    def test_unrecorded_send_survives_restart(self):
        # meta.json cannot be written (as on a full disk): a batch PUT but not
        # recorded as sent keeps its file, so a restart neither forgets the
        # object in /finish nor reuses its key for other rows.
        d = self.driver()
        d.begin(1, TOKEN, FIELDS)
        run_id = wait_until(lambda: d.status(1)["run_id"], 30, "the run")
        meta = os.path.join(self.spool, "1", "meta.json")
        def saved():
            with open(meta) as f:
                return run_id in f.read()
        wait_until(saved, 30, "the run id in meta.json")
        blocker = os.path.join(self.spool, "1", ".meta.json.tmp")
        os.mkdir(blocker)  # the atomic write's open fails (EISDIR), also for root
        rows = make_rows(13, 30)
        d.rows(1, rows[:10], pace=0.03)
        st = wait_until(lambda: (lambda s: s["failures"] >= 2 and s)(d.status(1)), 30, "unrecorded sends")
        self.assertIn("cannot record batch 0 as sent", st["last_error"])
        self.assertEqual(st["sent"], 0)
        self.assertGreaterEqual(len(self.my_puts(run_id)), 2, "the batch was PUT (and retried)")
        d.kill()
        self.assertIn(os.path.join(self.spool, "1", "000000.csv.gz"), self.spool_files())
        os.rmdir(blocker)
        d2 = self.driver()
        self.assertEqual(d2.cmd("resumed"), [1])
        self.assertEqual(d2.begin(1, TOKEN, FIELDS), {"rc": 0})
        d2.rows(1, rows[10:], pace=0.02)
        d2.end(1)
        self.wait_finished()
        self.assertEqual(len(self.api.runs), 1, "the resumed job keeps its run")
        self.check_run(run_id, rows)
        self.quit(d2)

    def test_clean_restart_keeps_keys_contiguous(self):
        d = self.driver()
        d.begin(3, TOKEN, FIELDS)
        rows = make_rows(15, 30)
        d.rows(3, rows[:10], pace=0.03)
        wait_until(lambda: d.status(3)["sent"] >= 1, 30, "a first upload")
        d.rows(3, rows[10:15])
        d.cmd("stop 3000")  # seals the open rows and opens an empty segment
        self.assertTrue([f for f in self.spool_files() if "/rows." in f], "an open segment after the stop")
        self.quit(d)
        d2 = self.driver()
        self.assertEqual(d2.cmd("resumed"), [3])
        self.assertEqual(d2.begin(3, TOKEN, FIELDS), {"rc": 0})
        d2.rows(3, rows[15:], pace=0.02)
        d2.end(3)
        fin = self.wait_finished()
        (run_id,) = fin.keys()
        self.check_run(run_id, rows)  # keys 000000, 000001, … without a gap
        self.quit(d2)

    def test_credentials_refreshed_before_expiry(self):
        self.api.expires_in = 4          # with a 2 s margin: refresh due after ~2 s
        self.api.refresh_keys = [KEY2]
        d = self.driver(refresh_margin_s=2)
        d.begin(1, TOKEN, FIELDS)
        rows = make_rows(6, 60)
        d.rows(1, rows[:50], pace=0.1)  # 5 s: refresh falls due mid-job (checked before each PUT)
        run_id = wait_until(lambda: d.status(1)["run_id"], 30, "the run")
        wait_until(lambda: self.api.runs[run_id]["refreshes"] >= 1, 30, "a credential refresh")
        d.rows(1, rows[50:], pace=0.05)
        d.end(1)
        self.wait_finished()
        self.check_run(run_id, rows)
        creds = self.api.runs[run_id]["creds"]
        mine = [p["headers"] for p in self.my_puts(run_id)]
        # Every PUT used the then-current credentials; the later ones the refreshed key.
        tokens = [c["session_token"] for c in creds]
        for h in mine:
            self.assertIn(h["x-amz-security-token"], tokens)
        self.assertIn("Credential=AKIDTEST2/", mine[-1]["authorization"])
        self.assertEqual(mine[-1]["x-amz-security-token"], tokens[-1])
        self.quit(d)

    def test_no_token_no_traffic(self):
        before = len(PROXY.requests)
        d = self.driver()
        self.assertEqual(d.begin(1, None, FIELDS), {"rc": 0})
        d.rows(1, make_rows(7, 10), pace=0.05)
        d.end(1)
        time.sleep(1.0)  # > 3 upload intervals
        self.assertFalse(d.status(1)["tracked"])
        self.assertEqual(self.api.requests, [], "the API saw traffic for a job without a token")
        self.assertEqual(len(PROXY.requests), before, "S3 saw traffic for a job without a token")
        self.assertEqual(self.spool_files(), [])
        self.quit(d)

    def test_spool_cap_drops_oldest_finished_first(self):
        PROXY.fail = "close"
        d = self.driver(cap=1800, interval_ms=250, inline_after=1000)
        d.begin(1, TOKEN, FIELDS)
        rows1 = make_rows(8, 60)
        for i in range(6):  # six batches of ten rows
            d.rows(1, rows1[i * 10:(i + 1) * 10])
            time.sleep(0.4)
        d.end(1)
        wait_until(lambda: d.status(1)["dropped"] >= 1, 30, "drops")
        d.begin(2, TOKEN, FIELDS)
        rows2 = make_rows(9, 10)
        d.rows(2, rows2)
        time.sleep(0.6)
        d.end(2)
        wait_until(lambda: d.status(2)["ended"] and d.status(2)["failures"] >= 1, 30, "job 2 sealed")
        self.assertEqual(d.status(2)["dropped"], 0, "a running job's data went before a finished job's")
        PROXY.fail = None
        fin = self.wait_finished(2)
        log = d.log_text()
        self.assertEqual(log.count("spool full"), 1, "one clear warning when the cap is hit")
        self.assertIn("job 1 (run", log.split("spool full")[1])
        st1 = d.status(1)
        run1 = [r for r, v in self.api.runs.items() if v["start"] and r in fin][0]
        keys1, got1 = self.delivered(run1)
        seqs = [int(k.rsplit("/", 1)[1].split(".")[0]) for k in keys1]
        self.assertEqual(seqs, list(range(st1["dropped"], st1["dropped"] + len(seqs))),
                         "the oldest batches were dropped, the newest kept")
        self.assertEqual(got1, rows1[len(rows1) - len(got1):], "kept rows are the newest, in order")
        self.assertEqual(self.api.runs[run1]["finish"][0]["data_uris"], [f"s3://{BUCKET}/{k}" for k in keys1])
        run2 = [r for r in fin if r != run1][0]
        self.check_run(run2, rows2)
        self.quit(d)

    def test_bounded_shutdown_keeps_spool(self):
        PROXY.fail = ("slow", 20)
        d = self.driver(timeout_ms=30000)
        d.begin(1, TOKEN, FIELDS)
        rows = make_rows(10, 10)
        d.rows(1, rows, pace=0.02)
        d.end(1)
        wait_until(lambda: d.status(1)["run_id"] and self.my_puts(d.status(1)["run_id"]), 30,
                   "an upload in flight")
        time.sleep(0.3)
        stopped = d.cmd("stop 1000")["stopped_ms"]
        self.assertLess(stopped, 5000, "stop is bounded by its timeout")
        self.assertGreaterEqual(stopped, 500, "stop kept trying for its budget")
        self.assertTrue([f for f in self.spool_files() if f.endswith(".csv.gz")], "unsent batches kept")
        self.quit(d)
        PROXY.fail = None
        d2 = self.driver()
        fin = self.wait_finished()
        (run_id,) = fin.keys()
        self.check_run(run_id, rows)
        self.quit(d2)

    def test_inline_when_nothing_uploaded(self):
        # No upload prefix from the API: the rows go inline in /finish.
        self.api.upload_uri_prefix = None
        d = self.driver()
        d.begin(1, TOKEN, FIELDS)
        rows = make_rows(11, 12)
        d.rows(1, rows, pace=0.05)
        d.end(1)
        d.begin(2, TOKEN, {})  # a job without rows: header only
        d.end(2)
        fin = self.wait_finished(2)
        wait_until(lambda: d.status(1)["finished"] and d.status(2)["finished"], 30, "both jobs done")
        by_rows = sorted(fin.values(), key=lambda f: len(f[0]["data_csv"]))
        self.assertEqual(by_rows[0][0]["data_csv"], HEADER + "\n")
        self.assertEqual(by_rows[1][0]["data_csv"], HEADER + "\n" + "\n".join(rows) + "\n")
        self.assertEqual({f[0]["data_source"] for f in fin.values()}, {"inline"})
        self.assertEqual(os.listdir(self.spool), [], "finished jobs leave nothing in the spool")
        self.quit(d)

    def test_refused_optional_field_is_left_out(self):
        # The API refuses a field's shape with a 422 naming it: the run starts
        # without it at once, and the job's data is not given up.
        self.api.refuse = {"tags", "team"}
        d = self.driver()
        d.begin(1, TOKEN, dict(FIELDS, team="core"))
        rows = make_rows(23, 5)
        d.rows(1, rows, pace=0.05)
        d.end(1, 2)
        fin = self.wait_finished()
        (run_id,) = fin.keys()
        start = self.api.runs[run_id]["start"]
        self.assertNotIn("tags", start)
        self.assertNotIn("team", start)
        self.assertEqual(start["job_name"], "train")
        self.assertEqual(self.api.count(r"^/runs$"), 2, "one refusal, then the run")
        self.check_run(run_id, rows, exit_code=2)
        self.assertIn("POST /runs refused", d.log_text())
        self.quit(d)

    def test_unknown_exit_status_waits_then_fails(self):
        # Ended without a status: /finish waits for a late one (a run client
        # reconnecting after a restart) and never says exit 0.
        d = self.driver(exit_wait_ms=3000)
        rows = make_rows(21, 4)
        for job in (1, 2):
            d.begin(job, TOKEN, FIELDS)
            d.rows(job, rows)
        t0 = time.monotonic()
        d.end(1, -1)
        d.end(2, -1)
        time.sleep(0.8)
        self.assertEqual(self.api.finishes(), {}, "/finish went before the wait for a status")
        d.exit(1, 3)
        fin = self.wait_finished(1)
        self.assertEqual([f[0]["exit_code"] for f in fin.values()], [3])
        self.assertLess(time.monotonic() - t0, 3.0, "a late status sends /finish at once")
        fin = self.wait_finished(2)
        codes = sorted((f[0]["exit_code"], f[0]["run_status"]) for f in fin.values())
        self.assertEqual(codes, [(-1, "failed"), (3, "failed")])
        self.assertGreaterEqual(time.monotonic() - t0, 3.0)
        d.exit(2, 0)  # too late: ignored
        time.sleep(0.3)
        self.assertEqual(self.api.count(r"/finish$"), 2)
        for run_id, f in fin.items():
            self.check_run(run_id, rows, f[0]["exit_code"])
        self.quit(d)

    def test_finish_any_2xx_accepted(self):
        self.api.finish_status = 202
        d = self.driver()
        d.begin(1, TOKEN, FIELDS)
        rows = make_rows(14, 6)
        d.rows(1, rows, pace=0.05)
        d.end(1)
        fin = self.wait_finished()
        wait_until(lambda: d.status(1)["finished"], 30, "job done")
        time.sleep(0.5)  # > the backoff: a retry would show
        self.assertEqual(self.api.count(r"/finish$"), 1, "a 202 to /finish was not taken as success")
        (run_id,) = fin.keys()
        self.check_run(run_id, rows)
        self.quit(d)

    def test_unusable_runs_reply_given_up(self):
        # Each 2xx without a run id may have created an orphan run: the job is
        # given up after as many as a rejecting 4xx, not retried forever.
        self.api.runs_reply = {"status": "created"}
        d = self.driver()
        d.begin(1, TOKEN, FIELDS)
        d.rows(1, make_rows(16, 5), pace=0.05)
        wait_until(lambda: self.api.count(r"^/runs$") >= 5, 30, "5 POST /runs")
        wait_until(lambda: "giving up" in d.log_text(), 30, "the job given up")
        st = d.status(1)
        self.assertFalse(st["finished"])
        self.assertEqual(st["bytes_pending"], 0)
        self.assertIn("unusable reply", st["last_error"])
        self.assertFalse(os.path.exists(os.path.join(self.spool, "1")), "its spool is removed")
        time.sleep(1.0)  # > the longest backoff: no more attempts
        self.assertEqual(self.api.count(r"^/runs$"), 5)
        self.quit(d)

    def test_inline_fallback_when_s3_keeps_failing(self):
        PROXY.fail = 503
        d = self.driver(inline_after=2)
        d.begin(1, TOKEN, FIELDS)
        rows = make_rows(12, 8)
        d.rows(1, rows)
        d.end(1)
        fin = self.wait_finished()
        wait_until(lambda: d.status(1)["finished"], 30, "job done")
        (f,) = fin.values()
        self.assertEqual(f[0]["data_source"], "inline")
        self.assertEqual(f[0]["data_csv"], HEADER + "\n" + "\n".join(rows) + "\n")
        self.assertEqual(os.listdir(self.spool), [])
        self.quit(d)


if __name__ == "__main__":
    unittest.main(verbosity=2)
