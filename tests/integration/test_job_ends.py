"""How jobs end, with a real unprivileged user: a root reaped at once by its
parent (a shell, a supervisor) is never called finished (its status is right
or marked unknown), and processes that detach from `run`'s command stay in
the job (the client is their subreaper)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import (TOOLS, UsersDaemonTest, call_as, run_ctl, spawn_as, wait_for, world_path)  # noqa: E402


class JobEnds(UsersDaemonTest):
    # Process-tree accounting: run leaves its commands out of cgroups here.
    cgroups = False
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-ends-")
        os.chmod(self.tmp, 0o777)
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.tmp]))

    def job(self, job_id):
        return self.d.call("GetJob", {"id": job_id})["job"]

    def test_reaped_root_status_is_right_or_unknown(self):
        # The shell reaps its child as soon as it exits: the daemon may or may
        # not read the status from the zombie first. Either way, never
        # "finished" for a command that exited 3 or was killed.
        for script, code, sig in (("sleep 0.4; exit 3", 3, None), ("sleep 0.4; kill -9 \\$\\$", 137, 9)) * 3:
            gate = os.path.join(self.tmp, "gate")
            if os.path.exists(gate):
                os.unlink(gate)
            outer = spawn_as(self.u, ["sh", "-c", 'sh -c "while [ ! -e %s ]; do sleep 0.01; done; %s" & '
                                      'echo $!; wait' % (gate, script)], stdout=subprocess.PIPE)
            self.addCleanup(lambda o=outer: (o.wait(), o.stdout.close()))
            pid = int(outer.stdout.readline())
            [r] = call_as(self.u, self.d.socket, "StartJob", {"pid": pid})
            self.assertEqual(r[0], "ok", r)
            job_id = r[1]["job"]["id"]
            open(gate, "w").close()
            outer.wait(timeout=30)
            wait_for(lambda: self.job(job_id)["state"] != "running", what="the job's end")
            j = self.job(job_id)
            got = (j["state"], j["exit_code"], j["signal"])
            self.assertIn(got, [("failed", code, sig), ("ended", None, None)], script)
            # Its parent (the one that knows) may still report the status.
            [r] = call_as(self.u, self.d.socket, "FinishJob",
                          {"id": job_id, "signal": sig} if sig else {"id": job_id, "exit_code": code})
            self.assertEqual((r[1]["job"]["state"], r[1]["job"]["exit_code"]), ("failed", code))
            _, out, _ = run_ctl(self.d, "--json", "status", str(job_id), user=self.u, check=0)
            self.assertEqual(json.loads(out)["job"]["exit_code"], code)

    def test_zombie_root_status_is_read(self):
        # A parent that does not reap (sleep, after the shell's exec) leaves
        # the root a zombie: the daemon reads its status itself, for a user
        # as for root (a zombie's /proc files belong to root: only its ids
        # decide, as in the kernel's rule).
        gate = os.path.join(self.tmp, "zgate")
        outer = spawn_as(self.u, ["sh", "-c", 'sh -c "while [ ! -e %s ]; do sleep 0.01; done; exit 3" & '
                                  'echo $!; exec sleep 5' % gate], stdout=subprocess.PIPE)
        self.addCleanup(lambda: (outer.kill(), outer.wait(), outer.stdout.close()))
        pid = int(outer.stdout.readline())
        [r] = call_as(self.u, self.d.socket, "StartJob", {"pid": pid})
        self.assertEqual(r[0], "ok", r)
        job_id = r[1]["job"]["id"]
        open(gate, "w").close()
        wait_for(lambda: self.job(job_id)["state"] != "running", what="the job's end")
        j = self.job(job_id)
        self.assertEqual((j["state"], j["exit_code"]), ("failed", 3))

    def test_detached_descendants_stay_in_the_job(self):
        # A double fork re-parents the worker; run is its subreaper, so the
        # worker stays in the job and its CPU is counted.
        truth = os.path.join(self.tmp, "truth.json")
        tool = world_path(os.path.join(TOOLS, "rt_workload"))
        # The command outlives the worker (a loaded machine may stretch its 2 s of CPU).
        script = "(%s --burners 1 --burn-secs 2 --out %s &); while [ ! -s %s ]; do sleep 0.1; done" % (
            tool, truth, truth)
        rc, _, err = run_ctl(self.d, "run", "-q", "-n", "detached", "--", "sh", "-c", script, user=self.u)
        self.assertEqual(rc, 0, err)
        with open(truth) as f:
            cpu = json.load(f)["cpu_secs"]
        [job] = self.d.call("ListJobs", {"name": "detached"})["jobs"]
        self.assertEqual(job["state"], "finished")
        got = job["summary"]["cpu_secs"]
        self.assertGreater(cpu, 1.5)
        self.assertLess(abs(got - cpu), 0.05 * cpu, "job CPU %.3f s, the detached worker's %.3f s" % (got, cpu))
        self.assertGreaterEqual(job["summary"]["peak_children"], 1)

    def test_orphans_are_counted_while_they_run(self):
        # Twenty detached sleepers: all of them are processes of the job.
        script = "for i in $(seq 20); do (sleep 2 &); done; sleep 2.5"
        rc, _, err = run_ctl(self.d, "run", "-q", "-n", "sleepers", "--", "sh", "-c", script, user=self.u)
        self.assertEqual(rc, 0, err)
        [job] = self.d.call("ListJobs", {"name": "sleepers"})["jobs"]
        self.assertGreaterEqual(job["summary"]["peak_children"], 20)

    def test_orphans_left_running_are_named(self):
        # The job ends with its command; what it left running is said, not tracked.
        rc, _, err = run_ctl(self.d, "run", "-q", "--", "sh", "-c", "(sleep 5 &); true", user=self.u)
        self.assertEqual(rc, 0, err)
        self.assertRegex(err, r"note: 1 process left behind by the command still runs \(pid \d+\)")


if __name__ == "__main__":
    unittest.main()
