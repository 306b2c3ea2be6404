"""Process-tree CPU accounting against ground truth (DESIGN §3): the job's
CPU equals the wait4() rusage of the wrapped command (tests/tools/rt_workload
reports getrusage(SELF)+getrusage(CHILDREN) after reaping everything), for
short-lived children, a multi-threaded burner, children whose first interval
holds all their CPU, children reaped several ticks after they exited, nested
reapers and a PID reused inside the tree. PID reuse never attaches a stranger."""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import (IFACE, TOOLS, DaemonTest, VarlinkError, job_samples, run_ctl, spawn_at,  # noqa: E402
                   starttime, wait_for)

WORKLOAD = os.path.join(TOOLS, "rt_workload")
TOLERANCE = 0.03      # relative, the requirement
SLACK_SECS = 0.03     # absolute floor for small totals: a few clock ticks


class Accuracy(DaemonTest):
    """Process-tree accounting: run leaves its commands out of cgroups here."""
    cgroups = False
    interval = 0.2

    def tree(self, job):
        return job["tracking"]["kind"] == "process-tree"

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="rt-acc-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.tmp]))

    def run_workload(self, name, *args):
        out = os.path.join(self.tmp, name + ".json")
        run_ctl(self.d, "run", "--quiet", "--job-name", name, "--", WORKLOAD, *args, "--out", out,
                check=0, timeout=120)
        with open(out) as f:
            truth = json.load(f)
        job = self.d.call("GetJob", {"name": name})["job"]
        self.assertEqual(job["pid"], truth["pid"])
        self.assertEqual((job["state"], job["exit_code"]), ("finished", 0))
        samples = job_samples(self.d, job["id"], page=7)
        self.assertEqual(len(samples), job["summary"]["samples"])
        return truth, job, samples

    def assertCpuMatches(self, truth, job, samples):
        want = truth["cpu_secs"]
        allowed = max(TOLERANCE * want, SLACK_SECS)
        got = job["summary"]["cpu_secs"]
        per_sample = sum(s["cpu"]["process_utime_secs"] + s["cpu"]["process_stime_secs"] for s in samples)
        msg = "rusage %.3f s, job %.3f s, Σ samples %.3f s, allowed ±%.3f s" % (want, got, per_sample, allowed)
        self.assertLessEqual(abs(got - want), allowed, msg)
        self.assertLessEqual(abs(per_sample - want), allowed, msg)
        self.assertTrue(all(s["cpu"]["process_utime_secs"] >= 0 and s["cpu"]["process_stime_secs"] >= 0
                            for s in samples))

    def test_500_children_and_two_core_burner(self):
        truth, job, samples = self.run_workload("many", "--children", "500", "--child-ms", "5",
                                                "--burners", "2", "--burn-secs", "3")
        self.assertGreater(truth["cpu_secs"], 8.0)
        self.assertCpuMatches(truth, job, samples)
        # The burner (two threads) ran for several ticks at up to two cores.
        self.assertGreater(job["summary"]["peak_cores"], 1.2)
        if self.tree(job):
            self.assertGreaterEqual(job["summary"]["peak_children"], 1)

    def test_first_interval_of_a_child_counts(self):
        # Four children burn 0.3 s right after fork, then sleep (alive) across
        # several ticks: first seen with all their CPU already used.
        truth, job, samples = self.run_workload("first", "--first-interval", "4:300:1000")
        self.assertGreater(truth["cpu_secs"], 1.2)
        self.assertCpuMatches(truth, job, samples)
        if self.tree(job):
            self.assertTrue(any(s["cpu"]["process_child_count"] == 4 for s in samples))

    def test_children_reaped_late_are_not_subtracted_twice(self):
        # Zombies kept for 1 s (five ticks) before reaping, and a grandchild
        # reaped late by a child that is itself reaped late.
        truth, job, samples = self.run_workload("late", "--lazy-reap", "4:300:1000", "--nested", "400:800")
        self.assertGreater(truth["cpu_secs"], 1.6)
        self.assertCpuMatches(truth, job, samples)

    def test_pid_reused_inside_the_tree(self):
        truth, job, samples = self.run_workload("reuse", "--reuse-pid", "300:600")
        if not truth["pid_reused"]:
            self.skipTest("another process took the PID first")
        self.assertCpuMatches(truth, job, samples)

    def test_command_held_until_registered(self):
        # The command burns 0.4 s as its very first action: had it run before
        # the job existed, that CPU would be missing from the job.
        truth, job, samples = self.run_workload("held", "--start-burn", "400", "--sleep-ms", "400")
        self.assertGreaterEqual(truth["start_realtime"], job["started_at"] - 0.001)
        self.assertCpuMatches(truth, job, samples)
        # The burn shows in the first samples, not just in the total.
        first_ticks = [s for s in samples if s["timestamp_secs"] <= int(truth["start_burn_done"]) + 1]
        self.assertGreater(sum(s["cpu"]["process_utime_secs"] for s in first_ticks), 0.3)

    def test_cores_stay_within_the_host(self):
        # Jobs that burn every core until they exit: their first and last
        # samples span a few ms, where one 10 ms clock tick reads as several
        # cores. The CPU total stays exact; no sample and no peak exceeds the host.
        ncpu = len(self.d.call("GetHostSample")["sample"]["cpu"]["per_core_pct"])
        for i in range(6):
            truth, job, samples = self.run_workload("short-%d" % i, "--burners", str(ncpu),
                                                    "--burn-secs", "0.3")
            self.assertCpuMatches(truth, job, samples)
            cores = [s["cpu"]["process_cores_used"] for s in samples]
            self.assertLessEqual(max(cores), ncpu, cores)
            self.assertLessEqual(job["summary"]["peak_cores"], ncpu, cores)
            # The peak is the highest sample (or the average, if higher): never
            # below the last sample, whatever its span.
            peak, avg = job["summary"]["peak_cores"], job["summary"]["avg_cores"]
            self.assertAlmostEqual(peak, max(max(cores), avg), places=3)
            self.assertGreaterEqual(peak, cores[-1])
            # A short sample is measured over 0.1 s at least: one tick cannot
            # make it read as several cores.
            for s in samples:
                span = max(s["actual_interval_ms"] / 1000, 0.1)
                cpu = s["cpu"]["process_utime_secs"] + s["cpu"]["process_stime_secs"]
                self.assertAlmostEqual(s["cpu"]["process_cores_used"], min(cpu / span, ncpu), delta=0.01)


class CgroupAccuracy(Accuracy):
    """The same workloads with run's command in a cgroup of its own: the
    kernel's cpu.stat against the same ground truth (docs/jobs.md)."""
    cgroups = True

    def run_workload(self, name, *args):
        truth, job, samples = super().run_workload(name, *args)
        self.assertEqual(job["tracking"]["kind"], "cgroup", job["tracking"])
        return truth, job, samples


class PidReuse(DaemonTest):
    interval = 0.2

    def test_stale_start_time_is_refused(self):
        # Without a pidfd from the caller: the start time tells a reused PID
        # apart when the two processes started in different clock ticks.
        p = subprocess.Popen(["sleep", "30"])
        pid, old = p.pid, starttime(p.pid)
        time.sleep(3.0 / os.sysconf("SC_CLK_TCK"))
        p.kill()
        p.wait()
        spawn_at(self, pid, "sleep", "30")
        self.assertNotEqual(starttime(pid), old)
        with self.assertRaises(VarlinkError) as e:
            self.d.call("StartJob", {"pid": pid, "start_time": old})
        self.assertEqual(e.exception.error, IFACE + ".NoSuchProcess")
        job = self.d.call("StartJob", {"pid": pid, "start_time": starttime(pid)})["job"]
        self.assertEqual(job["state"], "running")
        self.d.call("StopJob", {"id": job["id"]})

    def test_callers_pidfd_pins_the_process_it_meant(self):
        # The PID is reused at once, possibly within the same clock tick (the
        # same start time): the caller's pidfd still names the old process.
        p = subprocess.Popen(["sleep", "30"])
        pid, old = p.pid, starttime(p.pid)
        fd = os.pidfd_open(pid)
        self.addCleanup(os.close, fd)
        p.kill()
        p.wait()
        spawn_at(self, pid, "sleep", "30")
        for params in ({"pid": pid, "pidfd": 0}, {"pid": pid, "pidfd": 0, "start_time": old}):
            with self.assertRaises(VarlinkError) as e:
                self.d.call("StartJob", params, fds=[fd])
            self.assertEqual((e.exception.error, e.exception.parameters), (IFACE + ".NoSuchProcess", {"pid": pid}))
        self.assertEqual(self.d.call("ListJobs", {"running_only": True})["jobs"], [])
        # The new process's own pidfd: tracked.
        new = os.pidfd_open(pid)
        self.addCleanup(os.close, new)
        job = self.d.call("StartJob", {"pid": pid, "pidfd": 0}, fds=[new])["job"]
        self.assertEqual((job["state"], job["pid"]), ("running", pid))
        self.d.call("StopJob", {"id": job["id"]})

    def test_a_pidfd_that_is_not_the_pids_is_refused(self):
        p = subprocess.Popen(["sleep", "30"])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        other = os.pidfd_open(os.getpid())
        r, w = os.pipe()
        for fd in (other, r, w):
            self.addCleanup(os.close, fd)
        for params, fds in (({"pid": p.pid, "pidfd": 0}, [other]),   # another process's
                            ({"pid": p.pid, "pidfd": 0}, [r]),       # no pidfd at all
                            ({"pid": p.pid, "pidfd": 1}, [other]),   # no such descriptor
                            ({"pid": p.pid, "pidfd": 0}, [])):
            with self.subTest(params=params, fds=fds):
                with self.assertRaises(VarlinkError) as e:
                    self.d.call("StartJob", params, fds=fds)
                self.assertEqual((e.exception.error, e.exception.parameters),
                                 ("org.varlink.service.InvalidParameter", {"parameter": "pidfd"}))
        self.assertEqual(self.d.call("ListJobs", {"running_only": True})["jobs"], [])

    def test_ended_job_does_not_adopt_a_new_process_with_its_pid(self):
        p = subprocess.Popen(["sleep", "30"])
        job = self.d.call("StartJob", {"pid": p.pid, "start_time": starttime(p.pid)})["job"]
        wait_for(lambda: self.d.call("GetJob", {"id": job["id"]})["job"]["summary"]["samples"] >= 2)
        p.kill()
        p.wait()
        wait_for(lambda: self.d.call("GetJob", {"id": job["id"]})["job"]["state"] != "running",
                 what="the job to end")
        ended = self.d.call("GetJob", {"id": job["id"]})["job"]
        # A stranger at the same PID burning CPU.
        out = os.path.join(tempfile.mkdtemp(prefix="rt-acc-"), "s.json")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", os.path.dirname(out)]))
        spawn_at(self, p.pid, WORKLOAD, "--start-burn", "300", "--sleep-ms", "5000", "--out", out)
        time.sleep(1.0)  # five ticks in which a sloppy tracker would pick it up
        again = self.d.call("GetJob", {"id": job["id"]})["job"]
        self.assertEqual(again["state"], ended["state"])
        self.assertEqual(again["summary"], ended["summary"])
        self.assertEqual(self.d.call("ListJobs", {"running_only": True})["jobs"], [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
