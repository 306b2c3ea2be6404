"""The real single-node Slurm of slurmlib (Debian's slurmctld, slurmd and
munge, cgroup/v1 plugin): two real users' sbatch and srun jobs in the
plugin's cgroups, memory limits enforced, nothing left behind."""

import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rtlib import UsersTest, wait_for  # noqa: E402
from slurmlib import CGROUP_ROOT, Slurm, SlurmTest, available  # noqa: E402

MIB = 1 << 20


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
