"""The real single-node Slurm of slurmlib (Debian's slurmctld, slurmd and
munge, cgroup/v1 plugin): two real users' sbatch and srun jobs in the
plugin's cgroups, memory limits enforced, nothing left behind; and those
jobs as the daemon's readers see them (tests/tools/rt_facts): ids, names,
accounts, partitions, users and requests read from the jobs' processes and
cgroups without Slurm's help."""

import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rtlib import TOOLS, UsersTest, wait_for  # noqa: E402
from slurmlib import CGROUP_ROOT, Slurm, SlurmTest, available  # noqa: E402

MIB = 1 << 20


def facts(*args):
    p = subprocess.run([os.path.join(TOOLS, "rt_facts"), "slurm"] + [str(a) for a in args],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError("rt_facts %s: %s %s" % (args, p.stdout, p.stderr))
    return json.loads(p.stdout)


class SlurmFixtureTest(SlurmTest):
    def test_two_users_srun_and_sbatch(self):
        b = self.slurm.sbatch(self.u1, "-J", "train", "--mem=100M", script="sleep 60")
        self.addCleanup(subprocess.run, ["scancel", str(b)], env=self.slurm.env)
        p = self.slurm.srun(self.u2, "-J", "inter", "--mem=50M", "sleep", "60")
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        s = wait_for(lambda: self.slurm.jobs_of(self.u2), what="the srun job")[0]
        for user, jid, step in ((self.u1, b, "batch"), (self.u2, s, "0")):
            self.slurm.wait_running(jid)
            job = self.slurm.job(jid)
            self.assertEqual(job["UserId"].split("(")[0], user)
            uid = self.uid(user)
            task = wait_for(lambda: self.slurm.task_pids(uid, jid, step), what="job %d's task" % jid)[0]
            with open("/proc/%d/status" % task) as f:
                self.assertIn("\nUid:\t%d\t" % uid, f.read())
            # the cgroup/v1 plugin's layout, the memory limit of --mem
            with open(os.path.join(self.slurm.job_cgroup(uid, jid), "memory.limit_in_bytes")) as f:
                self.assertEqual(int(f.read()), (100 if user == self.u1 else 50) * MIB)

    def test_memory_limit_enforced(self):
        # The fixture's ConstrainRAMSpace holds: a job over its --mem is
        # killed by the kernel's OOM killer in its cgroup.
        jid = self.slurm.sbatch(self.u1, "-J", "hog", "--mem=64M",
                                script="exec /usr/bin/python3 -c 'x = bytearray(256 << 20); x[::4096] = b\"x\" * (len(x) // 4096)'")
        self.slurm.wait_ended(jid)
        self.assertEqual(self.slurm.job(jid)["JobState"], "OUT_OF_MEMORY")


class SlurmFactsTest(SlurmTest):
    def test_batch_job(self):
        jid = self.slurm.sbatch(self.u1, "-J", "train", "-A", "physics", "-p", "debug", "--mem=300M",
                                "-c", "1", "--gres=gpu:1", script="sleep 60")
        self.addCleanup(subprocess.run, ["scancel", str(jid)], env=self.slurm.env)
        self.slurm.wait_running(jid)
        uid = self.uid(self.u1)
        task = wait_for(lambda: self.slurm.task_pids(uid, jid, "batch"), what="the batch task")[0]
        self.assertTrue(os.path.isdir(self.slurm.job_cgroup(uid, jid)))  # the v1 plugin's layout
        got = facts(task)
        self.assertEqual(got["scheduler"], {"kind": "slurm", "job_id": jid, "name": "train",
                                            "account": "physics", "partition": "debug", "user": self.u1})
        self.assertEqual(got["uid"], uid)
        self.assertEqual(got["request"], {"cpus": 1.0, "memory_bytes": 300 * MIB, "gpus": 1})
        self.assertIn(got["gpu_ids"], ("0", "1"))
        # The job's cgroup path (as /proc/PID/cgroup has it) says the same,
        # and so does the extern step's process, whose environment is not
        # the job's: its facts come from the batch task.
        self.assertEqual(facts("--cgroup", "/slurm_localhost/uid_%d/job_%d" % (uid, jid)), got)
        ext = wait_for(lambda: self._step_procs(uid, jid, "extern"), what="the extern step's processes")
        for pid in ext:
            self.assertEqual(facts(pid)["scheduler"], got["scheduler"])

    def _step_procs(self, uid, jid, step):
        path = os.path.join(self.slurm.job_cgroup(uid, jid, "freezer"), "step_" + step, "cgroup.procs")
        try:
            with open(path) as f:
                return [int(p) for p in f.read().split()]
        except OSError:
            return []

    def test_srun_job(self):
        # srun puts neither the account nor the memory into the task's
        # environment: the memory comes from the limit task/cgroup set.
        p = self.slurm.srun(self.u2, "-J", "inter", "--mem=200M", "-c", "1", "sleep", "60")
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        jid = wait_for(lambda: self.slurm.jobs_of(self.u2), what="the srun job")[0]
        self.slurm.wait_running(jid)
        uid = self.uid(self.u2)
        task = wait_for(lambda: self.slurm.task_pids(uid, jid, "0"), what="the srun task")[0]
        got = facts(task)
        self.assertEqual(got["scheduler"], {"kind": "slurm", "job_id": jid, "name": "inter",
                                            "account": None, "partition": "debug", "user": self.u2})
        self.assertEqual(got["request"], {"cpus": 1.0, "memory_bytes": 200 * MIB})
        self.assertEqual(got["uid"], uid)

    def test_not_a_slurm_process(self):
        p = subprocess.run([os.path.join(TOOLS, "rt_facts"), "slurm", str(os.getpid())],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(json.loads(p.stdout), {"error": os.strerror(2)})


class SlurmCleanupTest(UsersTest):
    """The fixture leaves nothing behind: no daemon, no job process, no cgroup."""

    roles = ("u",)

    @classmethod
    def setUpClass(cls):
        why = available()
        if why:
            raise unittest.SkipTest(why)
        super().setUpClass()

    def test_stop_removes_everything(self):
        s = Slurm(gpus=0)
        self.addCleanup(s.stop)
        t0 = time.monotonic()
        s.start()
        started = time.monotonic() - t0
        jid = s.sbatch(self.u, "-J", "left", script="sleep 600")
        s.wait_running(jid)
        wait_for(s._pids_in_cgroups, what="the job's processes in their cgroups")
        s.stop()
        self.assertFalse(s._daemons(("slurmctld", "slurmd", "munged")))
        self.assertEqual(s._cgroup_tops(), [])
        self.assertFalse(os.path.exists(s.dir))
        leftovers = [h for h in os.listdir(CGROUP_ROOT) if os.path.isdir(os.path.join(CGROUP_ROOT, h, "slurm_localhost"))]
        self.assertEqual(leftovers, [])
        print("slurm fixture started in %.2f s" % started, file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
