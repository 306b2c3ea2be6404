"""Uploads end to end: `resource-trackerctl run` with SENTINEL_API_TOKEN
through a real daemon to a Sentinel API stand-in and a SigV4-checking S3
(Ceph radosgw on 127.0.0.1). What lands in S3 equals the job's samples
row for row; without a token nothing touches the network."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.environ.get("RT_SOURCE_DIR", "."), "tests", "upload"))
from harness import HEADER, object_rows, wait_until  # noqa: E402
from rgw import Radosgw  # noqa: E402
from rtlib import Daemon, job_samples, run_ctl  # noqa: E402
from standin import S3Proxy, SentinelStandin  # noqa: E402

BUCKET = "rt-e2e"
TOKEN = "tok-E2E-secret-42"
RGW = S3 = KEY = PROXY = None


def setUpModule():
    global RGW, S3, KEY, PROXY
    RGW = Radosgw().__enter__()
    KEY = RGW.keys[0]
    S3 = RGW.client(KEY)
    try:
        S3.put_bucket(BUCKET)
    except Exception:  # already there when a running radosgw is reused
        pass
    host, port = RGW.endpoint.split("//")[1].split(":")
    PROXY = S3Proxy((host, int(port)))  # plays S3 down; signatures still verify


def tearDownModule():
    if PROXY:
        PROXY.close()
    if RGW:
        RGW.__exit__(None, None, None)


class EndToEnd(unittest.TestCase):
    def setUp(self):
        self.prefix = "e2e/%s" % self._testMethodName
        self.api = SentinelStandin(TOKEN, BUCKET, [KEY], prefix=self.prefix)
        self.d = self.daemon()

    def daemon(self, env=None, state_dir=None, args=(), endpoint=None):
        return Daemon(interval=0.25, env=env, state_dir=state_dir,
                      args=["--s3-endpoint", endpoint or RGW.endpoint, "--s3-region", RGW.region] + list(args)
                      ).start()

    def tearDown(self):
        try:
            self.d.stop()
            log = self.d.read_log()
            self.assertNotIn(TOKEN, log, "the token was logged")
        finally:
            self.d.cleanup()
            self.api.close()
        self.assertEqual(self.api.violations, [], "requests the live API rejects")

    def test_run_uploads_every_sample(self):
        env = {"SENTINEL_API_TOKEN": TOKEN, "SENTINEL_API_URL": self.api.url,
               "TRACKER_UPLOAD_INTERVAL": "1", "TRACKER_PROJECT_NAME": "demo"}
        rc, _, err = run_ctl(self.d, "run", "-q", "-n", "e2e", "--tag", "k=v", "--", "sh", "-c",
                             "sleep 2.5; exit 4", env=env)
        self.assertEqual(rc, 4, err)
        fin = wait_until(lambda: self.api.finishes(), 60, "the run to finish")
        (run_id,) = fin.keys()
        start = self.api.runs[run_id]["start"]
        self.assertEqual(start["job_name"], "e2e")
        self.assertEqual(start["project_name"], "demo")
        self.assertEqual(start["tags"], {"k": "v"})
        self.assertIn("host_vcpus", start)
        self.assertIn("cloud_vendor_id", start)
        self.assertEqual(fin[run_id][0]["exit_code"], 4)
        self.assertEqual(fin[run_id][0]["run_status"], "failed")
        # Every object carries the header; together they are the job's CSV.
        keys = S3.list_keys(BUCKET, "%s/%s/" % (self.prefix, run_id))
        self.assertEqual(fin[run_id][0]["data_uris"], ["s3://%s/%s" % (BUCKET, k) for k in keys])
        rows = []
        for k in keys:
            header, r = object_rows(S3.get(BUCKET, k))
            self.assertEqual(header, HEADER)
            rows += r
        csv = self.d.call("GetJobSamples", {"name": "e2e", "format": "csv"})["csv"].splitlines()
        self.assertEqual(csv[0], HEADER)
        self.assertEqual(rows, csv[1:])
        self.assertGreaterEqual(len(rows), 8)
        job = self.d.call("GetJob", {"name": "e2e"})["job"]
        up = wait_until(lambda: (lambda u: u["state"] == "finished" and u)(
            self.d.call("GetJob", {"name": "e2e"})["job"]["upload"]), 30, "upload state finished")
        self.assertEqual((up["run_id"], up["batches_sent"], up["batches_pending"]), (run_id, len(keys), 0))
        self.assertEqual(job["state"], "failed")

    def test_a_stopped_job_finishes_its_run_as_finished(self):
        # A stop of tracking is no failure (its process goes on): the run
        # finishes at once as finished, exit code 0, as both reference
        # clients finish it; not after 30 s waiting for a status, as failed.
        env = {"SENTINEL_API_TOKEN": TOKEN, "SENTINEL_API_URL": self.api.url, "TRACKER_UPLOAD_INTERVAL": "1"}
        p = subprocess.Popen(["sleep", "120"])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        run_ctl(self.d, "start", "--pid", str(p.pid), "-n", "stopped", env=env)
        wait_until(lambda: self.d.call("GetJob", {"name": "stopped"})["job"]["summary"]["samples"] >= 4, 30,
                   "a few samples")
        run_ctl(self.d, "stop", "stopped")
        t0 = time.monotonic()
        fin = wait_until(lambda: self.api.finishes(), 60, "the run to finish")
        self.assertLess(time.monotonic() - t0, 20, "it waited for a status a stop never has")
        (run_id,) = fin.keys()
        self.assertEqual((fin[run_id][0]["run_status"], fin[run_id][0]["exit_code"]), ("finished", 0))
        self.assertIsNone(p.poll(), "its process goes on")

    def test_a_finish_refusing_a_batch_costs_only_it(self):
        # The API refuses the /finish that lists one object, naming it: only
        # that one is dropped and the run finishes with the others (it was
        # abandoned, its good batches with it).
        self.api.refuse_objects = {"/000001.csv.gz"}
        env = {"SENTINEL_API_TOKEN": TOKEN, "SENTINEL_API_URL": self.api.url, "TRACKER_UPLOAD_INTERVAL": "1"}
        rc, _, err = run_ctl(self.d, "run", "-q", "-n", "refused", "--", "sleep", "3.5", env=env)
        self.assertEqual(rc, 0, err)
        fin = wait_until(lambda: self.api.finishes(), 60, "the run to finish")
        (run_id,) = fin.keys()
        (refused,) = self.api.runs[run_id]["refused"]
        listed = refused["data_uris"]
        self.assertGreaterEqual(len(listed), 3)
        self.assertTrue(listed[1].endswith("/000001.csv.gz"), listed)
        self.assertEqual(fin[run_id][0]["data_uris"], listed[:1] + listed[2:])
        up = wait_until(lambda: (lambda u: u["state"] == "finished" and u)(
            self.d.call("GetJob", {"name": "refused"})["job"]["upload"]), 30, "upload state finished")
        self.assertEqual(up["batches_sent"], len(listed) - 1)
        self.assertIn("the API refuses batch 000001 in /finish; dropped, the run finishes without it",
                      self.d.read_log())

    def test_an_upload_given_up_shows_as_abandoned(self):
        # /finish refused for good (nothing of ours named): after 5 the upload
        # is given up, and says so; it never stays "finishing".
        env = {"SENTINEL_API_TOKEN": TOKEN, "SENTINEL_API_URL": self.api.url, "TRACKER_UPLOAD_INTERVAL": "1"}
        p = subprocess.Popen(["sleep", "120"])
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        run_ctl(self.d, "start", "--pid", str(p.pid), "-n", "given-up", env=env)

        def upload():
            return self.d.call("GetJob", {"name": "given-up"})["job"]["upload"]
        wait_until(lambda: upload()["batches_sent"] >= 1, 30, "a batch sent")
        self.api.fail = 422
        p.kill()
        p.wait()
        up = wait_until(lambda: (lambda u: u["state"] == "abandoned" and u)(upload()), 90, "the upload given up")
        self.assertIn("HTTP 422", up["last_error"])
        self.assertEqual(self.api.finishes(), {})
        self.assertEqual(self.api.count(r"/finish$"), 5)
        rc, out, _ = run_ctl(self.d, "status", "given-up", check=0)
        self.assertRegex(out, r"Upload +abandoned, run ")
        self.assertIn("giving up", self.d.read_log())

    def test_status_shows_upload(self):
        env = {"SENTINEL_API_TOKEN": TOKEN, "SENTINEL_API_URL": self.api.url}
        rc, _, err = run_ctl(self.d, "run", "-q", "-n", "shown", "--", "sleep", "1.2", env=env)
        self.assertEqual(rc, 0, err)
        wait_until(lambda: self.api.finishes(), 60, "the run to finish")
        wait_until(lambda: self.d.call("GetJob", {"name": "shown"})["job"]["upload"]["state"] == "finished",
                   30, "upload finished")
        rc, out, _ = run_ctl(self.d, "status", "shown", check=0)
        self.assertRegex(out, r"Upload +finished, run \S+, [1-9]\d* batches sent, 0 pending")

    def test_no_token_no_traffic(self):
        env = {"SENTINEL_API_TOKEN": "", "SENTINEL_API_URL": self.api.url}
        rc, _, err = run_ctl(self.d, "run", "-q", "--", "sleep", "1.5", env=env)
        self.assertEqual(rc, 0, err)
        job = self.d.call("ListJobs")["jobs"][0]
        self.assertIsNone(job["upload"])
        self.assertEqual(self.api.requests, [], "the API saw requests for a job without a token")
        self.assertEqual(os.listdir(os.path.join(self.d.state_dir, "spool")), [])

    def test_empty_api_url_disables_uploads(self):
        self.d.stop()
        self.d.cleanup()
        conf = os.path.join(tempfile.mkdtemp(prefix="rt-e2e-conf-"), "rt.conf")
        self.addCleanup(shutil.rmtree, os.path.dirname(conf), ignore_errors=True)
        with open(conf, "w") as f:
            f.write('upload: { api_url = ""; interval = "1s"; };\n')
        self.d = self.daemon(args=["--config", conf])
        rc, _, err = run_ctl(self.d, "run", "-q", "-n", "off", "--", "sleep", "1.5",
                             env={"SENTINEL_API_TOKEN": TOKEN, "SENTINEL_API_URL": ""})
        self.assertEqual(rc, 0, err)
        self.assertIsNone(self.d.call("GetJob", {"name": "off"})["job"]["upload"])
        time.sleep(1.5)  # > one upload interval after the end
        self.assertEqual(self.api.requests, [])
        self.assertIn("uploads are disabled (upload.api_url is empty)", self.d.read_log())

    def test_daemon_env_token_ignored(self):
        # A private daemon inherits the environment of the ctl call that
        # started it: that token must not upload a later job without one.
        self.d.stop()
        self.d.cleanup()
        self.d = self.daemon(env={"SENTINEL_API_TOKEN": TOKEN, "SENTINEL_API_URL": self.api.url,
                                  "TRACKER_UPLOAD_INTERVAL": "1"})
        env = {"SENTINEL_API_TOKEN": "", "SENTINEL_API_URL": "", "TRACKER_UPLOAD_INTERVAL": ""}
        rc, _, err = run_ctl(self.d, "run", "-q", "-n", "tokenless", "--", "sleep", "2.5", env=env)
        self.assertEqual(rc, 0, err)
        job = self.d.call("GetJob", {"name": "tokenless"})["job"]
        self.assertIsNone(job["upload"])
        time.sleep(1.5)  # > one upload interval after the end
        self.assertEqual(self.api.requests, [], "the daemon uploaded with the token of its environment")
        self.assertEqual(os.listdir(os.path.join(self.d.state_dir, "spool")), [])
        self.assertIn("SENTINEL_API_TOKEN in the daemon's environment is ignored", self.d.read_log())


class KillWithPendingBatches(unittest.TestCase):
    """The real daemon SIGKILLed while S3 is down and batches wait in its
    spool, restarted on the same state directory: every row arrives once."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-e2e-kill-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.prefix = "e2e/kill-%d" % int(time.time() * 1000)
        self.api = SentinelStandin(TOKEN, BUCKET, [KEY], prefix=self.prefix)
        self.addCleanup(self.api.close)
        self.addCleanup(setattr, PROXY, "fail", None)
        # The daemon's defaults come from its configuration file: the stand-in
        # and 1 s batches (`ctl start` sends the token only).
        self.conf = os.path.join(self.tmp, "rt.conf")
        with open(self.conf, "w") as f:
            f.write('upload: { api_url = "%s"; interval = "1s"; };\n' % self.api.url)
        self.state = os.path.join(self.tmp, "state")
        self.daemons = []

    def daemon(self, env=None):
        d = Daemon(interval=0.25, state_dir=self.state, env=env,
                   args=["--config", self.conf, "--s3-endpoint", PROXY.url, "--s3-region", RGW.region]).start()
        self.addCleanup(d.cleanup)
        return d

    def upload(self, d, job_id):
        return d.call("GetJob", {"id": job_id})["job"]["upload"]

    def test_sigkill_with_pending_batches(self):
        stall = os.path.join(self.tmp, "stall")
        go = os.path.join(self.tmp, "go")
        PROXY.fail = "close"
        d1 = self.daemon(env={"RESOURCE_TRACKERD_TEST_STALL_FILE": stall})
        proc = subprocess.Popen(["sh", "-c", "while [ ! -e %s ]; do sleep 0.05; done; exit 5" % go])
        self.addCleanup(lambda: (proc.poll() is None and proc.send_signal(signal.SIGKILL), proc.wait()))
        _, out, _ = run_ctl(d1, "start", "--pid", str(proc.pid), "--name", "killed",
                            env={"SENTINEL_API_TOKEN": TOKEN}, check=0)
        job_id = int(out.strip())
        up = wait_until(lambda: (lambda u: u and u["batches_pending"] >= 3 and u)(self.upload(d1, job_id)),
                        60, "batches pending while S3 is down")
        run_id = up["run_id"]
        self.assertTrue(run_id, up)
        self.assertEqual(up["batches_sent"], 0)
        self.assertIn("upload", up["last_error"])
        # Freeze the ticks so no sample is half-way between the store and the spool.
        open(stall, "w").close()
        time.sleep(1.0)
        d1.kill9()
        d1.check_log_clean()
        self.assertNotIn(TOKEN, d1.read_log(), "the token was logged")
        batches = [f for f in os.listdir(os.path.join(self.state, "spool", str(job_id))) if f.endswith(".csv.gz")]
        self.assertGreaterEqual(len(batches), 2, "sealed batches wait in the spool")
        self.assertEqual(self.api.finishes(), {})

        PROXY.fail = None
        d2 = self.daemon()
        self.assertEqual(d2.call("GetJob", {"id": job_id})["job"]["state"], "running")
        wait_until(lambda: self.upload(d2, job_id)["batches_sent"] >= len(batches), 60,
                   "the pending batches sent after the restart")
        time.sleep(1.5)  # rows sampled by the new daemon go into the same run
        open(go, "w").close()
        fin = wait_until(lambda: self.api.finishes(), 60, "the run to finish")
        self.assertEqual(list(fin), [run_id], "one run, continued after the restart")
        self.assertEqual(len(fin[run_id]), 1, "exactly one accepted /finish")
        job = wait_until(lambda: (lambda j: j["upload"]["state"] == "finished" and j)(
            d2.call("GetJob", {"id": job_id})["job"]), 30, "upload state finished")
        keys = S3.list_keys(BUCKET, "%s/%s/" % (self.prefix, run_id))
        self.assertEqual(keys, ["%s/%s/%06d.csv.gz" % (self.prefix, run_id, i) for i in range(len(keys))],
                         "contiguous keys across the restart")
        self.assertEqual(fin[run_id][0]["data_uris"], ["s3://%s/%s" % (BUCKET, k) for k in keys])
        self.assertEqual(fin[run_id][0]["exit_code"], job["exit_code"])
        rows = []
        for k in keys:
            header, r = object_rows(S3.get(BUCKET, k))
            self.assertEqual(header, HEADER)
            rows += r
        csv = job_samples(d2, job_id, page=50, fmt="csv").splitlines()
        self.assertEqual(csv[0], HEADER)
        self.assertEqual(rows, csv[1:], "every sample exactly once, in order")
        self.assertEqual(job["upload"]["batches_sent"], len(keys))
        d2.stop()
        self.assertNotIn(TOKEN, d2.read_log(), "the token was logged")
        self.assertEqual(self.api.violations, [], "requests the live API rejects")
        self.assertEqual(os.listdir(os.path.join(self.state, "spool")), [])

    def test_damaged_spool_costs_only_what_it_touches(self):
        # A running job's meta.json cut short and one of its batches damaged
        # while the daemon is down: the job goes on in the same run (meta.json
        # from its copy, the damaged one set aside), the damaged batch is
        # checked before its PUT and never sent, every other row arrives once.
        stall, go = os.path.join(self.tmp, "stall"), os.path.join(self.tmp, "go")
        PROXY.fail = "close"
        d1 = self.daemon(env={"RESOURCE_TRACKERD_TEST_STALL_FILE": stall})
        proc = subprocess.Popen(["sh", "-c", "while [ ! -e %s ]; do sleep 0.05; done" % go])
        self.addCleanup(lambda: (proc.poll() is None and proc.send_signal(signal.SIGKILL), proc.wait()))
        _, out, _ = run_ctl(d1, "start", "--pid", str(proc.pid), "--name", "damaged",
                            env={"SENTINEL_API_TOKEN": TOKEN}, check=0)
        job_id = int(out.strip())
        up = wait_until(lambda: (lambda u: u and u["batches_pending"] >= 3 and u)(self.upload(d1, job_id)),
                        60, "batches pending while S3 is down")
        run_id = up["run_id"]
        open(stall, "w").close()
        time.sleep(1.0)
        d1.kill9()
        spool = os.path.join(self.state, "spool", str(job_id))
        meta = os.path.join(spool, "meta.json")
        cut = os.path.getsize(meta) // 2
        with open(meta, "r+b") as f:
            f.truncate(cut)
        batches = sorted(f for f in os.listdir(spool) if f.endswith(".csv.gz"))
        self.assertGreaterEqual(len(batches), 2)
        bad = batches[1]
        with open(os.path.join(spool, bad), "r+b") as f:
            data = f.read()
            _, bad_rows = object_rows(data)
            f.seek(len(data) // 2)
            f.write(bytes(b ^ 0x5A for b in data[len(data) // 2:len(data) // 2 + 4]))

        PROXY.fail = None
        d2 = self.daemon()
        wait_until(lambda: self.upload(d2, job_id)["batches_sent"] >= len(batches) - 1, 60, "the good batches sent")
        time.sleep(1.5)  # rows sampled by the new daemon go into the same run
        open(go, "w").close()
        fin = wait_until(lambda: self.api.finishes(), 60, "the run to finish")
        self.assertEqual(list(fin), [run_id], "the same run, continued from meta.json's copy")
        uris = fin[run_id][0]["data_uris"]
        self.assertFalse([u for u in uris if u.endswith("/" + bad)], "the damaged batch was sent")
        rows = []
        for u in uris:
            header, r = object_rows(S3.get(BUCKET, u.split("/", 3)[3]))
            self.assertEqual(header, HEADER)
            rows += r
        csv = job_samples(d2, job_id, page=50, fmt="csv").splitlines()[1:]
        self.assertTrue(bad_rows and set(bad_rows) <= set(csv))
        self.assertEqual(rows, [r for r in csv if r not in set(bad_rows)], "every other row once, in order")
        quarantine = os.path.join(self.state, "spool", "quarantine")
        self.assertEqual(sorted(os.listdir(quarantine)), ["%d-%s" % (job_id, bad), "%d-meta.json" % job_id])
        self.assertEqual(os.path.getsize(os.path.join(quarantine, "%d-meta.json" % job_id)), cut)
        log = d2.read_log()
        self.assertEqual(log.count("meta.json is damaged"), 1, log)
        self.assertIn("kept as quarantine/%d-meta.json, the job goes on from meta-copy.json" % job_id, log)
        self.assertIn("batch %s is damaged (not the gzip CSV the spool sealed): not sent, dropped; kept as "
                      "quarantine/%d-%s" % (bad, job_id, bad), log)
        job = wait_until(lambda: (lambda j: j["upload"]["state"] == "finished" and j)(
            d2.call("GetJob", {"id": job_id})["job"]), 30, "upload state finished")
        self.assertEqual(job["upload"]["batches_sent"], len(uris))
        d2.stop()
        self.assertNotIn(TOKEN, d2.read_log(), "the token was logged")
        self.assertEqual(self.api.violations, [], "requests the live API rejects")
        self.assertEqual(os.listdir(os.path.join(self.state, "spool")), ["quarantine"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
