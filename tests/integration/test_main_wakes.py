"""The daemon's main thread wakes only when something is due (daemon.c
housekeeping_arm): not for ticks nobody streams, yet connections are still
timed out on time, and streams started after quiet ticks (whose samples
waited in the sampler's outbox, one tick's worth) get each sample once."""

import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import IFACE, DaemonTest, job_samples, wait_for  # noqa: E402


def main_thread_switches(pid):
    """voluntary_ctxt_switches of the thread whose TID is the PID."""
    with open("/proc/%d/task/%d/status" % (pid, pid)) as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches in the main thread's status")


class MainWakes(DaemonTest):
    daemon_args = ("--set", "limits.idle_timeout=2s")

    def start_job(self):
        p = subprocess.Popen(["sleep", "60"])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        return p, self.d.call("StartJob", {"pid": p.pid})["job"]["id"]

    def samples(self, job):
        return self.d.call("GetJob", {"id": job})["job"]["summary"]["samples"]

    def test_main_thread_sleeps_while_the_sampler_ticks(self):
        _, job = self.start_job()
        wait_for(lambda: self.samples(job) >= 2, what="the job's first samples")
        before_samples = self.samples(job)
        # The client's hang-up is a wake-up of its own: let it pass.
        pid = self.d.proc.pid
        time.sleep(0.5)
        before = main_thread_switches(pid)
        time.sleep(6)  # the window measured: 30 ticks at 0.2 s
        woke = main_thread_switches(pid) - before
        # One housekeeping (STATUS= every 10 s) at most, and slack for one
        # stray wake-up; it was one a second, and more, before.
        self.assertLessEqual(woke, 3, "the main thread woke %d times in 6 s with nobody connected" % woke)
        self.assertGreaterEqual(self.samples(job) - before_samples, 15, "the sampler did not keep ticking")

    def test_idle_connection_is_closed_on_time(self):
        # A quiet daemon still wakes for a connection's limit.
        self.start_job()
        with self.d.connect() as c:
            self.assertEqual(c.call("Ping"), {})
            since = time.monotonic()
            c.sock.settimeout(10)
            self.assertIsNone(c.recv(), "the idle connection was not closed")
            idle = time.monotonic() - since
        self.assertGreaterEqual(idle, 1.9)
        self.assertLess(idle, 3.5, "closed %.2f s after its last call, limits.idle_timeout=2s" % idle)

    def test_host_stream_after_quiet_ticks_has_no_repeat(self):
        time.sleep(1.5)  # ticks nobody streams: their samples wait in the outbox
        with self.d.connect() as c:
            got = []
            for p in c.stream("StreamHostSamples"):
                got.append(p["sample"]["timestamp_ms"])
                if len(got) == 6:
                    break
        self.assertTrue(all(a < b for a, b in zip(got, got[1:])), "timestamps not strictly increasing: %s" % got)

    def test_job_stream_after_quiet_ticks_gets_each_sample_once(self):
        p, job = self.start_job()
        wait_for(lambda: self.samples(job) >= 2, what="the job's first samples")
        time.sleep(1.5)  # quiet ticks: the job's samples wait in the outbox too
        got = []
        with self.d.connect() as c:
            for r in c.stream("GetJobSamples", {"id": job, "follow": True}):
                got += r["samples"]
                if len(got) >= 20 and p.poll() is None:
                    p.kill()
                if r["ended"]:
                    break
        stamps = [s["timestamp_ms"] for s in got]
        self.assertTrue(all(a < b for a, b in zip(stamps, stamps[1:])), "a sample twice or out of order")
        self.assertEqual(got, job_samples(self.d, job), "the stream and the job's file differ")

    def first_reply_sampled_at(self, job):
        """The job's current.sampled_at in a new StreamJobs' first reply, as
        a scrape of the exporter reads it (a connection of its own)."""
        with self.d.connect() as c:
            c.send(IFACE + ".StreamJobs", {}, more=True)
            r = c.recv()
        self.assertNotIn("error", r)
        return {j["id"]: j for j in r["parameters"]["jobs"]}[job]["current"]["sampled_at"]

    def test_first_replies_are_as_of_the_latest_tick(self):
        # One-shot StreamJobs calls are what every scrape makes: while
        # nobody streams, the ticks' events wait, but a first reply must not.
        _, job = self.start_job()
        wait_for(lambda: self.samples(job) >= 2, what="the job's first samples")
        for _ in range(3):
            time.sleep(1.1)
            at = self.first_reply_sampled_at(job)
            self.assertLess(time.time() - at, 1.0, "a first reply %.1f s old at a 0.2 s interval" % (time.time() - at))


if __name__ == "__main__":
    unittest.main(verbosity=2)
