"""What a job may store (issue 11): metadata is bounded per job and an
ended job's metadata is kept on disk only; intervals read back from a record
are checked; with real users, a loop of StartJob/StopJob with large
metadata stays within the documented disk and memory bounds while a
well-behaved client's Ping stays fast, and one user's samples never evict
another user's ended job while the first holds more than an even share."""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import (IFACE, Connection, Daemon, UsersTest, VarlinkError, call_as, spawn_as,  # noqa: E402
                   wait_for)

METADATA_MAX = 64 * 1024  # RT_JOB_METADATA_MAX


def serialised(md):
    return len(json.dumps(md, separators=(",", ":")))


def tags_of(nbytes):
    """A metadata object of tags that serialises to exactly nbytes."""
    md = {"tags": []}
    while serialised(md) + 1003 <= nbytes:
        md["tags"].append("t" * 1000)
    md["tags"].append("")
    md["tags"][-1] = "t" * (nbytes - serialised(md))
    assert serialised(md) == nbytes
    return md


class Metadata(unittest.TestCase):
    def setUp(self):
        self.d = Daemon(interval=0.1).start()
        self.addCleanup(self.d.cleanup)

    def proc(self, *cmd):
        p = subprocess.Popen(list(cmd))
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        return p

    def test_metadata_over_the_limit_is_refused(self):
        p = self.proc("sleep", "30")
        # About 1 MB of tags, just under the message size limit (1 MiB), and just over this one.
        for size in (1000 * 1000, METADATA_MAX + 1):
            with self.assertRaises(VarlinkError) as e:
                self.d.call("StartJob", {"pid": p.pid, "metadata": tags_of(size)})
            self.assertEqual(e.exception.error, IFACE + ".LimitExceeded")
            self.assertEqual(e.exception.parameters, {"limit": "metadata_bytes", "max": METADATA_MAX})
        self.assertEqual(self.d.call("ListJobs")["jobs"], [], "nothing was registered")
        self.assertEqual(os.listdir(os.path.join(self.d.state_dir, "jobs")), [])
        self.d.stop()

    def test_ended_jobs_metadata_comes_from_disk(self):
        md = tags_of(METADATA_MAX)  # exactly the limit
        p = self.proc("sleep", "30")
        job = self.d.call("StartJob", {"pid": p.pid, "metadata": md})["job"]
        self.assertEqual(job["metadata"], md)
        stopped = self.d.call("StopJob", {"id": job["id"]})["job"]
        self.assertEqual(stopped["metadata"], md)
        self.assertEqual(self.d.call("GetJob", {"id": job["id"]})["job"]["metadata"], md)
        self.assertEqual(self.d.call("ListJobs")["jobs"][0]["metadata"], md)
        # Once, in its own file; the record does not repeat it.
        jdir = os.path.join(self.d.state_dir, "jobs", str(job["id"]))
        with open(os.path.join(jdir, "metadata.json")) as f:
            self.assertEqual(json.load(f), md)
        with open(os.path.join(jdir, "job.json")) as f:
            self.assertNotIn("metadata", json.load(f))
        self.d.stop()
        d2 = Daemon(interval=0.1, state_dir=self.d.state_dir).start()
        self.addCleanup(d2.cleanup)
        self.assertEqual(d2.call("GetJob", {"id": job["id"]})["job"]["metadata"], md)
        d2.stop()

    def test_record_from_before_the_metadata_file(self):
        p = self.proc("sleep", "30")
        md = {"project_name": "old", "tags": ["a", "b"]}
        job = self.d.call("StartJob", {"pid": p.pid, "metadata": md})["job"]
        self.d.call("StopJob", {"id": job["id"]})
        self.d.stop()
        jdir = os.path.join(self.d.state_dir, "jobs", str(job["id"]))
        with open(os.path.join(jdir, "job.json")) as f:
            rec = json.load(f)
        rec["metadata"] = md
        with open(os.path.join(jdir, "job.json"), "w") as f:
            json.dump(rec, f)
        os.unlink(os.path.join(jdir, "metadata.json"))
        d2 = Daemon(interval=0.1, state_dir=self.d.state_dir).start()
        self.addCleanup(d2.cleanup)
        self.assertEqual(d2.call("GetJob", {"id": job["id"]})["job"]["metadata"], md)
        with open(os.path.join(jdir, "metadata.json")) as f:
            self.assertEqual(json.load(f), md)
        d2.stop()

    def test_interval_out_of_range_in_a_record(self):
        p = self.proc("sleep", "30")
        job = self.d.call("StartJob", {"pid": p.pid, "interval_secs": 0.2})["job"]
        self.d.call("StopJob", {"id": job["id"]})
        self.d.stop()
        path = os.path.join(self.d.state_dir, "jobs", str(job["id"]), "job.json")
        for bad in (0, -5, 1e300, 86400):
            with open(path) as f:
                rec = json.load(f)
            rec["interval_secs"] = bad
            with open(path, "w") as f:
                json.dump(rec, f)
            d2 = Daemon(interval=0.1, state_dir=self.d.state_dir).start()
            try:
                got = d2.call("GetJob", {"id": job["id"]})["job"]
                self.assertEqual(got["interval_secs"], 1.0, bad)
                wait_for(lambda: "interval_secs out of range in its record" in d2.read_log(),
                         what="the warning")
                d2.stop()
            finally:
                d2.cleanup()


def state_bytes(state):
    """What the state directory's files take (their sizes, as retention counts them)."""
    total = 0
    for root, _, files in os.walk(state):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:"))


class Pinger(threading.Thread):
    """A well-behaved client: a Ping every 10 ms, its latencies kept."""

    def __init__(self, sock):
        super().__init__(daemon=True)
        self.sock, self.times, self.stop = sock, [], threading.Event()

    def run(self):
        with Connection(self.sock) as c:
            while not self.stop.is_set():
                t = time.monotonic()
                c.call("Ping")
                self.times.append(time.monotonic() - t)
                time.sleep(0.01)

    def p99(self):
        self.stop.set()
        self.join()
        v = sorted(self.times)
        return v[int(len(v) * 0.99)] if v else 0


class Users(UsersTest):
    roles = ("a", "b")

    def daemon(self, retention, interval=0.1):
        conf = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
        conf.write("retention: { %s };\n" % retention)
        conf.close()
        self.addCleanup(os.unlink, conf.name)
        # ASan keeps freed memory in quarantine; a small one lets RSS show
        # what the daemon holds.
        env = {"ASAN_OPTIONS": os.environ["ASAN_OPTIONS"] + ":quarantine_size_mb=1"} \
            if "ASAN_OPTIONS" in os.environ else None
        d = Daemon(interval=interval, args=["--config", conf.name], env=env)
        self.addCleanup(d.cleanup)
        return d.start()

    def sleeper(self, user, secs=600):
        p = spawn_as(user, ["sleep", str(secs)])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        wait_for(lambda: os.stat("/proc/%d" % p.pid).st_uid != 0, what="the process of " + user)
        return p

    def test_metadata_loop_stays_within_bounds(self):
        d = self.daemon('max_size = "1M"; max_jobs_per_user = 10000;')
        p = self.sleeper(self.a)
        md = tags_of(63 * 1024)
        loop = [("StartJob", {"pid": p.pid, "name": "loop", "metadata": md}), ("StopJob", {"name": "loop"})]
        pinger = Pinger(d.socket)
        pinger.start()
        # About 1 MB of tags is refused outright.
        r = call_as(self.a, d.socket, "StartJob", {"pid": p.pid, "metadata": tags_of(1000 * 1000)})
        self.assertEqual(r[0][:2], ("error", IFACE + ".LimitExceeded"))
        rss = []
        for _ in range(4):
            out = call_as(self.a, d.socket, None, calls=loop * 150)
            self.assertTrue(all(x[0] == "ok" for x in out), [x for x in out if x[0] != "ok"][:1])
            time.sleep(2)  # retention runs within a second of jobs ending
            rss.append(rss_kib(d.proc.pid))
        p99 = pinger.p99()
        size = state_bytes(d.state_dir)
        # 600 jobs of 63 KiB of metadata: 38 MB without bounds; the store stays
        # at its limit (and what one pass of retention lets through), and the
        # daemon's memory does not grow with the ended jobs (held in memory,
        # their metadata alone would add 18 MiB over the last two rounds).
        self.assertLessEqual(size, 1024 * 1024 + 128 * 1024, "state directory bytes")
        self.assertLess(rss[3] - rss[1], 8192, "RSS (KiB) after each round: %s" % rss)
        self.assertLess(p99, 0.05, "Ping p99 %.1f ms during the loop" % (p99 * 1000))
        self.assertIn("removed by the retention policy", d.read_log())
        d.stop()

    def test_ended_jobs_per_user(self):
        d = self.daemon("max_jobs_per_user = 5;")
        p = self.sleeper(self.a)
        loop = [("StartJob", {"pid": p.pid, "name": "few"}), ("StopJob", {"name": "few"})]
        out = call_as(self.a, d.socket, None, calls=loop * 12)
        ids = [x[1]["job"]["id"] for x in out[::2]]
        wait_for(lambda: [j["id"] for j in d.call("ListJobs")["jobs"]] == ids[:-6:-1], timeout=15,
                 what="the user's 5 newest ended jobs left")
        d.stop()

    def test_one_user_does_not_evict_another(self):
        d = self.daemon('max_size = "60K";')
        q = spawn_as(self.b, ["sleep", "0.5"])
        self.addCleanup(lambda: (q.poll() is None and q.kill(), q.wait()))
        wait_for(lambda: os.stat("/proc/%d" % q.pid).st_uid != 0, what="b's process")
        jb = call_as(self.b, d.socket, "StartJob", {"pid": q.pid})[0][1]["job"]["id"]
        wait_for(lambda: d.call("GetJob", {"id": jb})["job"]["state"] != "running", what="b's job to end")
        # The host samples b's job refers to, sealed at the first tick with no
        # job running: jobs that run back to back share a block (and its bytes).
        host = os.path.join(d.state_dir, "host")
        wait_for(lambda: any(f.endswith(".z") for f in os.listdir(host)), what="b's host block sealed")
        # a's jobs, one after the other, grow the store well past its limit:
        # a's oldest go, b's stays.
        deadline = time.monotonic() + 60
        ids = []
        while "removed by the retention policy" not in d.read_log() or len(ids) < 5:
            self.assertLess(time.monotonic(), deadline, "a's jobs to exceed the limit")
            p = spawn_as(self.a, ["sleep", "1"])
            self.addCleanup(lambda p=p: (p.poll() is None and p.kill(), p.wait()))
            wait_for(lambda: os.stat("/proc/%d" % p.pid).st_uid != 0, what="a's process")
            ids.append(call_as(self.a, d.socket, "StartJob", {"pid": p.pid})[0][1]["job"]["id"])
            p.wait()
            self.assertEqual(d.call("GetJob", {"id": jb})["job"]["id"], jb, "b's job is there")
        # A running job of a keeps growing once a has no ended job left: still
        # nothing of b's goes (running jobs are kept, logged once).
        p = self.sleeper(self.a)
        grows = call_as(self.a, d.socket, "StartJob", {"pid": p.pid, "name": "grows"})[0][1]["job"]["id"]
        wait_for(lambda: "no user above an even share has an ended job left" in d.read_log(), timeout=90,
                 what="the store over its limit with only a's running job to hold it")
        self.assertEqual(d.call("GetJob", {"id": jb})["job"]["id"], jb, "b's job is there")
        left = {j["id"] for j in d.call("ListJobs")["jobs"]}
        self.assertIn(jb, left)
        self.assertTrue(set(ids) - left, "a's ended jobs went")
        d.call("StopJob", {"id": grows})
        d.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
