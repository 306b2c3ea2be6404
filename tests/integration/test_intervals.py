"""Job intervals are honoured or refused, with a real user: a job is sampled
at the interval it asks for (not a multiple of the daemon's), down to 0.1 s;
shorter is refused with the rule; a user's jobs together are held to a
sample rate; a reload applies a new base interval. No job's CSV repeats a
timestamp."""

import os
import pwd
import signal
import statistics
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import (Daemon, UsersDaemonTest, call_as, run_ctl, spawn_as, wait_for)  # noqa: E402


def csv_stamps(csv):
    return [float(ln.split(",")[0]) for ln in csv.splitlines()[1:]]


class Intervals(UsersDaemonTest):
    @classmethod
    def daemon(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rt-iv-")
        cls.addClassCleanup(subprocess.run, ["rm", "-rf", cls.tmp])
        os.chmod(cls.tmp, 0o755)
        cls.conf = os.path.join(cls.tmp, "rt.conf")
        with open(cls.conf, "w") as f:
            f.write("interval = \"1s\";\nlimits: { max_sample_rate_per_user = 12; };\n")
        # No --interval flag: the file's applies, and a reload may change it.
        return Daemon(interval=None, args=["--config", cls.conf])

    def ctl(self, *args):
        return run_ctl(self.d, *args, user=self.u)

    def job(self, name):
        return self.d.call("ListJobs", {"name": name})["jobs"][0]

    def csv(self, job_id):
        return self.d.call("GetJobSamples", {"id": job_id, "format": "csv", "limit": 10000})["csv"]

    def assert_spaced(self, name, secs):
        job = self.job(name)
        self.assertEqual(job["interval_secs"], secs)
        stamps = csv_stamps(self.csv(job["id"]))
        self.assertEqual(len(stamps), len(set(stamps)), "a timestamp repeats")
        self.assertEqual(stamps, sorted(stamps))
        gaps = [b - a for a, b in zip(stamps[1:-2], stamps[2:-1])]  # not the short first and last
        self.assertGreaterEqual(len(gaps), 3, stamps)
        self.assertAlmostEqual(statistics.median(gaps), secs, delta=0.03, msg=gaps)
        near = [g for g in gaps if abs(g - secs) <= 0.1]
        self.assertGreaterEqual(len(near), 0.8 * len(gaps), gaps)

    def test_intervals_are_kept_exactly(self):
        # 0.5 and 2.5 against a 1 s daemon: neither rounded to 1 s or 3 s.
        for name, iv, secs in (("half", "0.5", 4), ("two-and-a-half", "2.5", 14)):
            rc, _, err = self.ctl("run", "-q", "-i", iv, "-n", name, "--", "sleep", str(secs))
            self.assertEqual(rc, 0, err)
            self.assert_spaced(name, float(iv))

    def test_too_short_an_interval_is_refused_with_the_rule(self):
        rc, _, err = self.ctl("run", "-q", "-i", "0.05", "--", "true")
        self.assertEqual(rc, 2, err)
        self.assertIn("from 0.1 to 3600", err)
        p = spawn_as(self.u, ["sleep", "30"])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        wait_for(lambda: os.stat("/proc/%d" % p.pid).st_uid == pwd.getpwnam(self.u).pw_uid)
        [r] = call_as(self.u, self.d.socket, "StartJob", {"pid": p.pid, "interval_secs": 0.05})
        self.assertEqual(r[1:], ("org.varlink.service.InvalidParameter", {"parameter": "interval_secs"}))
        [r] = call_as(self.u, self.d.socket, "StartJob", {"pid": p.pid, "interval_secs": 0.1})
        self.assertEqual(r[0], "ok", r)
        self.d.call("StopJob", {"id": r[1]["job"]["id"]})

    def test_sample_rate_per_user(self):
        # 12 samples per second for the user: 0.1 s (10/s) fits, 0.25 s more does not.
        p = spawn_as(self.u, ["sleep", "30"])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        wait_for(lambda: os.stat("/proc/%d" % p.pid).st_uid == pwd.getpwnam(self.u).pw_uid)
        [r] = call_as(self.u, self.d.socket, "StartJob", {"pid": p.pid, "interval_secs": 0.1})
        self.assertEqual(r[0], "ok", r)
        before = len(self.d.call("ListJobs")["jobs"])
        rc, _, err = self.ctl("run", "-q", "-i", "0.25", "--", "sh", "-c", "exit 3")
        self.assertEqual(rc, 3, err)  # it runs all the same, untracked
        self.assertIn("at most 12 samples per second", err)
        self.assertIn("running sh untracked", err)
        self.assertEqual(len(self.d.call("ListJobs")["jobs"]), before)
        rc, _, err = self.ctl("run", "-q", "-i", "1", "--", "true")  # 10 + 1 fits
        self.assertEqual(rc, 0, err)
        # Root is not held to it.
        self.assertEqual(run_ctl(self.d, "run", "-q", "-i", "0.1", "--", "sleep", "0.3")[0], 0)
        self.d.call("StopJob", {"id": r[1]["job"]["id"]})

    def test_reload_applies_the_interval(self):
        with open(self.conf, "w") as f:
            f.write("interval = \"500ms\";\nlimits: { max_sample_rate_per_user = 12; };\n")
        self.addCleanup(self.restore_conf)
        self.d.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "reloaded: interval" in self.d.read_log(), what="the reload")
        self.assertNotIn("interval: at the next restart", self.d.read_log())
        self.assertEqual(self.d.call("Info")["interval_secs"], 0.5)
        with self.d.connect() as c:
            got = []
            for r in c.stream("StreamHostSamples"):
                got.append(r["sample"])
                if len(got) == 6:
                    break
        gaps = [s["actual_interval_ms"] for s in got[2:]]
        self.assertAlmostEqual(statistics.median(gaps), 500, delta=50, msg=gaps)
        # New jobs take it as their default.
        rc, _, err = self.ctl("run", "-q", "-n", "after-reload", "--", "sleep", "3")
        self.assertEqual(rc, 0, err)
        self.assert_spaced("after-reload", 0.5)

    def restore_conf(self):
        with open(self.conf, "w") as f:
            f.write("interval = \"1s\";\nlimits: { max_sample_rate_per_user = 12; };\n")
        self.d.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: self.d.call("Info")["interval_secs"] == 1.0, what="the interval back at 1 s")


if __name__ == "__main__":
    unittest.main()
