"""Setuid and setgid processes (docs/jobs.md, "What a job's owner may
see"), with real users and real setuid binaries: the daemon applies the
kernel's rule for /proc/PID/io. A user cannot start a job on a process that
runs with other ids than its own, and a job whose process later execs a
setuid binary stops showing that process's I/O and PSS (CPU and RSS, which
every user sees, are still counted)."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import TOOLS, UsersDaemonTest, job_samples, run_ctl, spawn_as  # noqa: E402

DENIED = 4
MIB = 1 << 20


class Setuid(UsersDaemonTest):
    # Process-tree accounting: run leaves its commands out of cgroups here.
    cgroups = False
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rt-setuid-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        os.chmod(cls.tmp, 0o755)
        # root-owned copies: setuid root, setgid root, and plain ones.
        cls.bins = {}
        for name, src, mode in (("suid-sleep", shutil.which("sleep"), 0o4755),
                                ("sgid-sleep", shutil.which("sleep"), 0o2755),
                                ("suid-workload", os.path.join(TOOLS, "rt_workload"), 0o4755),
                                ("workload", os.path.join(TOOLS, "rt_workload"), 0o755)):
            dst = os.path.join(cls.tmp, name)
            shutil.copy(src, dst)
            os.chown(dst, 0, 0)
            os.chmod(dst, mode)
            cls.bins[name] = dst
        cls.out = os.path.join(cls.tmp, "out")
        os.mkdir(cls.out)
        os.chmod(cls.out, 0o1777)
        super().setUpClass()

    def process(self, *cmd):
        p = spawn_as(self.u, list(cmd))
        self.addCleanup(lambda: (p.kill(), p.wait()))
        return p

    def test_start_is_refused_on_setuid_and_setgid_processes(self):
        for name in ("suid-sleep", "sgid-sleep"):
            p = self.process(self.bins[name], "30")
            rc, _, err = run_ctl(self.d, "start", "--pid", str(p.pid), user=self.u)
            self.assertEqual(rc, DENIED, err)
            self.assertIn("setuid or setgid", err)
            # Root may: it reads every process.
            job = self.d.call("StartJob", {"pid": p.pid})["job"]
            self.d.call("StopJob", {"id": job["id"]})
        # Its own plain process: accepted.
        p = self.process(shutil.which("sleep"), "30")
        rc, out, err = run_ctl(self.d, "start", "--pid", str(p.pid), user=self.u)
        self.assertEqual(rc, 0, err)
        self.d.call("StopJob", {"id": int(out.strip())})

    def run_writer(self, binary, name):
        """A job whose root execs binary, which burns 300 ms of CPU, writes 24
        MiB (synced) and stays 2 s; returns the job and its samples."""
        data = os.path.join(self.out, name)
        script = "sleep 0.5; exec %s --start-burn 300 --write 24:%s --sleep-ms 2000 --out %s.json" % (
            binary, data, data)
        rc, _, err = run_ctl(self.d, "run", "--quiet", "--job-name", name, "--", "sh", "-c", script, user=self.u)
        self.assertEqual(rc, 0, err)
        job = self.d.call("ListJobs", {"name": name})["jobs"][0]
        return job, job_samples(self.d, job["id"])

    def test_exec_of_a_setuid_binary_hides_its_io_and_pss(self):
        job, samples = self.run_writer(self.bins["workload"], "plain")
        self.assertGreaterEqual(job["summary"]["disk_write_bytes"], 24 * MIB)
        job, samples = self.run_writer(self.bins["suid-workload"], "setuid")
        self.assertEqual(job["state"], "finished")
        # sh's own few bytes at most: not the 24 MiB the setuid process wrote.
        self.assertLess(job["summary"]["disk_write_bytes"], MIB)
        self.assertTrue(os.path.getsize(os.path.join(self.out, "setuid")) == 24 * MIB)
        late = [s["cpu"] for s in samples[len(samples) // 2:] if s["cpu"]["process_rss_mib"]]
        self.assertGreater(len(late), 3)
        # Its RSS (public) stands in for its PSS; CPU is still counted.
        self.assertTrue(all(c["process_pss_mib"] == c["process_rss_mib"] for c in late), late)
        self.assertGreater(job["summary"]["cpu_secs"], 0.25)
        self.assertGreater(job["summary"]["peak_rss_bytes"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
