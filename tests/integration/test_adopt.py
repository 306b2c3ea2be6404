"""Adoption (docs/admin.md): jobs that appear by themselves. Containers'
cgroups made by hand in docker's and podman's layouts (no runtime runs
here), a configured glob over a user's cgroup, and a real Slurm's jobs of two
real users: each becomes a cgroup job of its user with what its scheduler
says, and ends when its cgroup empties."""

import os
import pwd
import secrets
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rtlib import CGROUP_ROOTS, Daemon, HandCgroup, UsersTest, call_as, run_ctl, wait_for  # noqa: E402
from slurmlib import NODE, SlurmTest  # noqa: E402

MIB = 1 << 20


def adopted(d, cgroup):
    """The running or ended job of cgroup, or None."""
    for j in d.call("ListJobs", {"limit": 1000})["jobs"]:
        if j["tracking"]["cgroup"] == cgroup:
            return j
    return None


class Containers(UsersTest):
    roles = ("u", "other")

    def setUp(self):
        self.glob_top = "/rt-adopt-%d" % os.getpid()
        self.d = Daemon(interval=0.2, args=["--set", "adopt.containers=true",
                                            "--set", "adopt.cgroups=%s/*" % self.glob_top])
        self.addCleanup(self.d.cleanup)
        self.d.start()
        self.addCleanup(self.d.stop)

    def test_containers_are_adopted_and_end_with_their_cgroup(self):
        ids = {layout: secrets.token_hex(32) for layout in ("docker", "podman")}
        docker = HandCgroup(self, "docker", path="/docker/" + ids["docker"])
        podman = HandCgroup(self, "podman", path="/machine.slice/libpod-%s.scope" % ids["podman"])
        empty = HandCgroup(self, "empty", path="/docker/" + secrets.token_hex(32))
        procs = {}
        for layout, cg in (("docker", docker), ("podman", podman)):
            procs[layout] = cg.spawn("sleep", "600")
            self.addCleanup(lambda p=procs[layout]: (p.kill(), p.wait()))
        for layout, cg in (("docker", docker), ("podman", podman)):
            job = wait_for(lambda: adopted(self.d, cg.path), what="the %s container adopted" % layout)
            self.assertEqual((job["state"], job["owner_uid"]), ("running", 0))
            self.assertEqual(job["tracking"]["kind"], "cgroup")
            self.assertTrue(job["tracking"]["adopted"])
            self.assertEqual((job["container"]["runtime"], job["container"]["id"]), (layout, ids[layout]))
            self.assertEqual(job["name"], os.path.basename(cg.path), "no state files: the cgroup's name")
        time.sleep(1.5)  # a few scans
        self.assertIsNone(adopted(self.d, empty.path), "an empty cgroup is left alone")
        self.assertEqual(sum(1 for j in self.d.call("ListJobs")["jobs"] if j["tracking"]["cgroup"] == docker.path), 1,
                         "adopted once")
        # Tracked already: start --cgroup names the adopted job.
        _, _, err = run_ctl(self.d, "start", "--cgroup", docker.path, check=1)
        self.assertIn("already tracked, by job %d" % adopted(self.d, docker.path)["id"], err)
        # Its processes gone, the job ends, its exit status unknown.
        procs["docker"].kill()
        procs["docker"].wait()
        job = wait_for(lambda: (lambda j: j["state"] != "running" and j)(adopted(self.d, docker.path)),
                       what="the container's job to end")
        self.assertEqual(job["state"], "ended")
        self.assertIn("adopted the cgroup %s as job %d" % (docker.path, job["id"]), self.d.read_log())

    def test_thousands_of_empty_ones_delay_but_never_hide_one(self):
        # Empty matching cgroups are looked at 256 a second, in turn: one
        # container among 1,000 empty ones is adopted within a few scans.
        top = self.glob_top + "/many"
        HandCgroup(self, "many", path=top)
        roots = [r for r in CGROUP_ROOTS if os.path.isdir(r + top)]
        for i in range(1000):
            for r in roots:
                os.mkdir("%s%s/e%04d" % (r, top, i))
        cg = HandCgroup(self, "real", path=top + "/e0999/real")
        p = cg.spawn("sleep", "600")
        self.addCleanup(lambda: (p.kill(), p.wait()))
        d = Daemon(interval=0.2, args=["--set", "adopt.cgroups=%s/*/real %s/*" % (top, top)])
        self.addCleanup(d.cleanup)
        d.start()
        self.addCleanup(d.stop)
        t0 = time.monotonic()
        wait_for(lambda: adopted(d, cg.path), timeout=20, what="the one populated cgroup adopted")
        self.assertLess(time.monotonic() - t0, 10)
        # the populated one and its parent, none of the empty ones
        wait_for(lambda: {j["tracking"]["cgroup"] for j in d.call("ListJobs")["jobs"]} == {cg.path, top + "/e0999"},
                 what="the parent adopted too")
        time.sleep(1)
        self.assertEqual(len(d.call("ListJobs")["jobs"]), 2)

    def test_a_glob_adopts_a_users_cgroup_for_that_user(self):
        cg = HandCgroup(self, "glob", path=self.glob_top + "/work")
        uid = pwd.getpwnam(self.u).pw_uid
        for root in cg.roots:
            os.chown(root + cg.path, uid, -1)
        p = cg.spawn("sh", "-c", "while :; do :; done")
        self.addCleanup(lambda: (p.kill(), p.wait()))
        job = wait_for(lambda: adopted(self.d, cg.path), what="the glob's cgroup adopted")
        self.assertEqual((job["owner_uid"], job["name"], job["container"], job["scheduler"]),
                         (uid, "work", None, None))
        # Its owner sees it as a job of theirs; another user does not.
        rc, out, err = run_ctl(self.d, "jobs", "--format", "csv", user=self.u, check=0)
        self.assertEqual(rc, 0, err)
        self.assertIn("%d,work," % job["id"], out)
        [r] = call_as(self.other, self.d.socket, "GetJob", {"id": job["id"]})
        self.assertEqual(r[0], "error")
        wait_for(lambda: (self.d.call("GetJob", {"id": job["id"]})["job"]["summary"].get("cpu_secs") or 0) > 0.2,
                 what="its CPU counted")


class Slurm(SlurmTest):
    """A real Slurm's jobs (cgroup/v1 plugin), as two real users submit them."""

    def setUp(self):
        self.d = Daemon(interval=0.2, args=["--set", "adopt.slurm=true"])
        self.addCleanup(self.d.cleanup)
        self.d.start()
        self.addCleanup(self.d.stop)

    def job_of(self, slurm_id):
        for j in self.d.call("ListJobs", {"limit": 1000})["jobs"]:
            if (j.get("scheduler") or {}).get("job_id") == slurm_id:
                return j
        return None

    def test_every_slurm_job_is_tracked_as_its_user(self):
        cpu_file = "/tmp/rt-adopt-cpu-%d" % os.getpid()
        self.addCleanup(lambda: os.path.exists(cpu_file) and os.unlink(cpu_file))
        burn = ("exec /usr/bin/python3 -c 'import os, time\n"
                "t = time.process_time()\n"
                "while time.process_time() - t < 1.5: pass\n"
                "time.sleep(1)\n"
                "open(\"%s\", \"w\").write(str(time.process_time()))'" % cpu_file)
        b = self.slurm.sbatch(self.u1, "-J", "train", "--mem=100M", "--cpus-per-task=1", script=burn)
        self.addCleanup(subprocess.run, ["scancel", str(b)], env=self.slurm.env)
        short = self.slurm.sbatch(self.u2, "-J", "short", "--mem=50M", script="sleep 2")
        self.addCleanup(subprocess.run, ["scancel", str(short)], env=self.slurm.env)
        for sid, user, name, mem in ((b, self.u1, "train", 100), (short, self.u2, "short", 50)):
            job = wait_for(lambda: self.job_of(sid), what="Slurm job %d adopted" % sid)
            self.assertEqual((job["owner_uid"], job["name"]), (self.uid(user), name))
            self.assertTrue(job["tracking"]["adopted"])
            self.assertEqual(job["tracking"]["cgroup"], "/slurm_%s/uid_%d/job_%d" % (NODE, self.uid(user), sid))
            self.assertEqual((job["scheduler"]["kind"], job["scheduler"]["user"]), ("slurm", user))
            self.assertEqual(job["request"]["memory_bytes"], mem * MIB)
            # its user sees it; the other does not
            [mine] = call_as(user, self.d.socket, "GetJob", {"id": job["id"]})
            self.assertEqual(mine[0], "ok")
        for sid in (b, short):
            self.slurm.wait_ended(sid)
        ended = {sid: wait_for(lambda: (lambda j: j["state"] != "running" and j)(self.job_of(sid)),
                               what="job %d to end" % sid) for sid in (b, short)}
        self.assertEqual(ended[short]["state"], "ended")
        # Its CPU is the job's own, within 5 %.
        want = float(open(cpu_file).read())
        got = ended[b]["summary"]["cpu_secs"]
        self.assertLess(abs(got - want), 0.05 * want + 0.1, (got, want))

    def test_a_job_over_its_memory_ends_as_an_oom_kill(self):
        # The script goes on after its command is killed (on v1 the kill is
        # counted in the killed process's cgroup, read while it exists).
        sid = self.slurm.sbatch(self.u1, "-J", "hog", "--mem=64M",
                                script="sleep 1.5; /usr/bin/python3 -c 'x = bytearray(256 << 20); "
                                       "x[::4096] = b\"x\" * (len(x) // 4096)'; sleep 1")
        self.addCleanup(subprocess.run, ["scancel", str(sid)], env=self.slurm.env)
        self.slurm.wait_ended(sid)
        job = wait_for(lambda: (lambda j: j and j["state"] != "running" and j)(self.job_of(sid)),
                       what="the hog's job to end")
        self.assertGreaterEqual(job["summary"]["oom_kills"], 1)
        self.assertEqual(job["name"], "hog")


if __name__ == "__main__":
    unittest.main(verbosity=2)
