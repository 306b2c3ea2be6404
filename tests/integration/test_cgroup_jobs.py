"""Cgroup jobs on real cgroups of this (hybrid) machine: CPU and pressure from
the v2 tree, memory and OOM kills from the v1 memory hierarchy (DESIGN §4,
docs/jobs.md). A cgroup job counts processes started outside any tracked
tree and ones that join later, ends when its cgroup empties, names an OOM
kill; `run` puts its command in a cgroup of its own and removes it after the
job; a single-process job's memory peak is the kernel's maxrss, and the
recommendation asks for at least it, for cgroup jobs and process trees."""

import os
import pwd
import re
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import (CTL, DaemonTest, HandCgroup as Cgroup, UsersDaemonTest, call_as, remove_cgroup, run_ctl, spawn_as,  # noqa: E402
                   wait_for)

V2 = "/sys/fs/cgroup/unified"
V1 = {"memory": "/sys/fs/cgroup/memory", "cpuacct": "/sys/fs/cgroup/cpuacct"}
TOLERANCE = 0.03
ALLOC_300M = "import time; x = bytearray(300 * 2**20); time.sleep(0.3)"


def have_cgroups():
    return os.path.isfile(os.path.join(V2, "cgroup.procs")) and all(
        os.path.isfile(os.path.join(p, "cgroup.procs")) for p in V1.values())


def usage_usec(path):
    with open(V2 + path + "/cpu.stat") as f:
        return int(f.read().split("usage_usec")[1].split()[0])


@unittest.skipUnless(have_cgroups(), "needs the v2 tree and v1 memory and cpuacct hierarchies (hybrid)")
class CgroupJobs(DaemonTest):
    interval = 0.25

    def start(self, cg, *extra):
        return int(run_ctl(self.d, "start", "--cgroup", cg.path, *extra, check=0)[1])

    def ended(self, jid, timeout=20):
        return wait_for(lambda: (lambda j: j["state"] != "running" and j)(self.d.call("GetJob", {"id": jid})["job"]),
                        timeout=timeout, what="the job's end")

    def test_cpu_of_processes_started_outside_and_joining_later(self):
        # Each burner waits for the job, then burns one CPU second: the truth
        # does not depend on how busy the machine is.
        cg, go = Cgroup(self, "cpu"), os.path.join(self.d.tmp, "go")
        burn = ("import os, time\nwhile not os.path.exists(%r): time.sleep(0.02)\n"
                "while time.process_time() < 1: pass" % go)
        first = cg.spawn(sys.executable, "-c", burn)
        time.sleep(0.3)  # started
        before = usage_usec(cg.path)
        jid = self.start(cg, "--name", "outside")
        open(go, "w").close()
        later = cg.spawn(sys.executable, "-c", burn)  # joins the running job
        for p in (first, later):
            self.assertEqual(p.wait(timeout=60), 0)
        job = self.ended(jid)  # its cgroup emptied: the job ended by itself
        truth = (usage_usec(cg.path) - before) / 1e6
        self.assertEqual(job["state"], "ended")
        self.assertEqual(job["tracking"], {"kind": "cgroup", "cgroup": cg.path, "why": None, "adopted": False})
        self.assertIsNone(job["pid"])
        got = job["summary"]["cpu_secs"]
        self.assertGreater(truth, 1.8)
        self.assertLessEqual(abs(got - truth), TOLERANCE * truth, "cpu.stat %.3f s, job %.3f s" % (truth, got))
        # Per-process figures are not read for a cgroup job: null, not 0.
        self.assertIsNone(job["summary"]["peak_children"])
        self.assertIsNone(job["summary"]["peak_pss_bytes"])

    def test_a_restart_resumes_a_cgroup_job_and_loses_one_whose_cgroup_went(self):
        kept, gone = Cgroup(self, "kept"), Cgroup(self, "gone")
        sleepers = [kept.spawn("sleep", "60"), gone.spawn("sleep", "60")]
        kept_id, gone_id = self.start(kept, "--name", "kept"), self.start(gone, "--name", "gone")
        root = subprocess.Popen(["sleep", "60"])
        self.addCleanup(root.wait)
        self.addCleanup(root.kill)
        # A job with a root in a cgroup made for it (as run's): its root ends
        # while no daemon runs, the job is lost and its empty cgroup goes.
        rooted = subprocess.Popen(["sleep", "60"])
        rooted_id = self.d.call("StartJob", {"pid": rooted.pid, "own_cgroup": True})["job"]["id"]
        made = self.d.call("GetJob", {"id": rooted_id})["job"]["tracking"]["cgroup"]
        self.assertTrue(made.startswith(self.d.cgroup_parent + "/job-"), made)
        run_id = int(run_ctl(self.d, "start", "--pid", str(root.pid), check=0)[1])
        time.sleep(0.6)
        self.d.kill9()
        rooted.kill()
        rooted.wait()
        sleepers[1].kill()
        sleepers[1].wait()
        remove_cgroup(gone.path)
        self.d.start()
        job = self.d.call("GetJob", {"id": kept_id})["job"]
        self.assertEqual((job["state"], job["tracking"]["cgroup"]), ("running", kept.path))
        wait_for(lambda: self.d.call("GetJob", {"id": gone_id})["job"]["state"] == "lost", what="the lost job")
        self.assertEqual(self.d.call("GetJob", {"id": run_id})["job"]["state"], "running")
        wait_for(lambda: self.d.call("GetJob", {"id": rooted_id})["job"]["state"] == "lost", what="the lost job")
        self.assertFalse(os.path.exists(V2 + made), "the lost job's empty cgroup stays")
        # Once the resumed job is sampled again, a CPU second in its cgroup counts.
        samples = self.d.call("GetJob", {"id": kept_id})["job"]["summary"]["samples"]
        wait_for(lambda: self.d.call("GetJob", {"id": kept_id})["job"]["summary"]["samples"] > samples,
                 what="a sample of the resumed job")
        before = self.d.call("GetJob", {"id": kept_id})["job"]["summary"]["cpu_secs"]
        burner = kept.spawn(sys.executable, "-c", "import time\nwhile time.process_time() < 1: pass")
        self.assertEqual(burner.wait(timeout=60), 0)
        sleepers[0].kill()
        sleepers[0].wait()
        job = self.ended(kept_id)
        self.assertEqual(job["state"], "ended")
        self.assertGreater(job["summary"]["cpu_secs"] - before, 0.95)
        self.assertLess(job["summary"]["cpu_secs"] - before, 1.3)

    def test_stop_says_the_memory_peak(self):
        cg = Cgroup(self, "stop")
        holder = cg.spawn(sys.executable, "-c", "import time; x = bytearray(64 * 2**20); time.sleep(60)")
        self.addCleanup(holder.wait)
        self.addCleanup(holder.kill)
        jid = self.start(cg, "--name", "holder")
        wait_for(lambda: (self.d.call("GetJob", {"id": jid})["job"]["summary"]["memory_peak_bytes"] or 0) > 64 << 20,
                 what="the job's memory")
        out = run_ctl(self.d, "stop", str(jid), check=0)[1]
        self.assertRegex(out, r"^job %d stopped after [^:]+: \d+\.\d\d CPU seconds, memory peak (6[4-9]|[7-9]\d)\.\d MiB\n$"
                         % jid)

    def test_oom_kill_ends_as_an_oom_kill(self):
        cg = Cgroup(self, "oom", memory_limit=64 << 20)
        sleeper = cg.spawn("sleep", "60")
        jid = self.start(cg, "--name", "greedy")
        hog = cg.spawn(sys.executable, "-c", "x = bytearray(256 * 2**20)")
        self.assertEqual(hog.wait(timeout=30), -signal.SIGKILL)
        wait_for(lambda: self.d.call("GetJob", {"id": jid})["job"]["summary"]["oom_kills"] or None,
                 what="the OOM kill counted")
        sleeper.kill()
        sleeper.wait()
        job = self.ended(jid)
        s = job["summary"]
        self.assertGreaterEqual(s["oom_kills"], 1)
        self.assertEqual(job["memory_limit_bytes"], 64 << 20)
        self.assertLessEqual(s["cgroup_memory_peak_bytes"], 64 << 20)
        out = run_ctl(self.d, "status", str(jid), check=0)[1]
        self.assertIn("OOM killer killed", out)
        self.assertRegex(out, r"Memory   peak [^\n]* of a 64\.0 MiB limit")

    def test_run_in_a_limited_cgroup_stays_there_and_names_its_oom_kill(self):
        # A scheduler's memory limit (as Slurm's) must keep holding: run
        # leaves its command there, a process tree, and reads the kill from
        # the limited cgroup.
        cg = Cgroup(self, "oomrun", memory_limit=64 << 20)
        env = dict(os.environ, RESOURCE_TRACKER_SOCKET=self.d.socket)
        run = cg.spawn(CTL, "run", "-o", "/dev/null", "--job-name", "oomrun", "--",
                       sys.executable, "-c", "x = bytearray(256 * 2**20)", env=env, stderr=subprocess.PIPE)
        err = run.communicate(timeout=60)[1].decode()
        self.assertEqual(run.returncode, 128 + signal.SIGKILL, err)
        self.assertIn("OOM killer killed 1 process at the memory limit", err)  # the note (docs/efficiency.md)
        job = self.d.call("GetJob", {"name": "oomrun"})["job"]
        self.assertEqual(job["tracking"]["kind"], "process-tree")
        self.assertIn(cg.path, job["tracking"]["why"])
        self.assertGreaterEqual(job["summary"]["oom_kills"], 1)
        self.assertEqual(job["memory_limit_bytes"], 64 << 20)

    def test_four_busy_processes_on_two_cores_show_cpu_pressure(self):
        if os.cpu_count() > 2:
            self.skipTest("needs at most 2 CPUs to make 4 burners wait")
        cg = Cgroup(self, "psi")
        jid = self.start(cg, "--name", "crowd")
        burners = [cg.spawn("sha256sum", "/dev/zero") for _ in range(4)]
        time.sleep(2.5)
        for p in burners:
            p.kill()
            p.wait()
        s = self.ended(jid)["summary"]
        self.assertGreater(s["pressure"]["cpu_some_pct"], 20, s["pressure"])
        self.assertIsNone(s["throttled_pct"], "no CPU quota: no throttling figure")
        self.assertIn("CPU pressure", run_ctl(self.d, "status", str(jid), check=0)[1])

    def test_run_gets_a_cgroup_that_holds_its_detached_worker_and_goes(self):
        # The worker double-forks out of the tree and burns a second of CPU;
        # the command outlives it.
        done = os.path.join(self.d.tmp, "worker-done")
        burn = "%s -c 'import time\nwhile time.process_time() < 1: pass'" % sys.executable
        script = "(sh -c \"%s; touch %s\" &); while [ ! -e %s ]; do sleep 0.05; done" % (burn, done, done)
        run_ctl(self.d, "run", "--job-name", "detached", "-o", "/dev/null", "--", "sh", "-c", script, check=0)
        job = self.d.call("GetJob", {"name": "detached"})["job"]
        path = job["tracking"]["cgroup"]
        self.assertEqual(job["tracking"]["kind"], "cgroup")
        self.assertTrue(path.startswith(self.d.cgroup_parent + "/job-"), path)
        self.assertGreater(job["summary"]["cpu_secs"], 0.95, "the detached worker's second counts")
        for root in [V2] + list(V1.values()):
            self.assertFalse(os.path.exists(root + path), root + path + " is left after the job")

    def check_peak(self, d, name):
        out = os.path.join(d.tmp, name + ".maxrss")
        run_ctl(d, "run", "--job-name", name, "-o", "/dev/null", "--", "/usr/bin/time", "-f", "%M", "-o", out,
                sys.executable, "-c", ALLOC_300M, check=0)
        with open(out) as f:
            maxrss = int(f.read().split()[-1]) * 1024
        job = d.call("GetJob", {"name": name})["job"]
        peak = job["summary"]["memory_peak_bytes"]
        self.assertLessEqual(abs(peak - maxrss), 0.02 * maxrss, "maxrss %d, the job's peak %d" % (maxrss, peak))
        rec = run_ctl(d, "recommend", str(job["id"]), "--json", check=0)[1]
        mib = int(re.search(r'"memory_mib":\s*(\d+)', rec).group(1))
        self.assertGreaterEqual(mib << 20, maxrss, "recommend asks for less than the job needed")
        return job

    def test_a_single_process_peak_is_its_maxrss(self):
        job = self.check_peak(self.d, "peak-cgroup")
        self.assertEqual(job["tracking"]["kind"], "cgroup")


class ProcessTreePeak(DaemonTest):
    """The same peak where run leaves its command a process tree: each
    process's high-water mark and the command's ru_maxrss make up for the
    samples that miss the peak."""
    cgroups = False
    interval = 1

    def test_a_single_process_peak_is_its_maxrss(self):
        job = CgroupJobs.check_peak(self, self.d, "peak-tree")
        self.assertEqual(job["tracking"]["kind"], "process-tree")
        self.assertEqual(job["tracking"]["why"], "cgroups.run is false")


@unittest.skipUnless(have_cgroups(), "needs the v2 tree and v1 memory and cpuacct hierarchies (hybrid)")
class WhoMayTrackWhat(UsersDaemonTest):
    roles = ("alice", "bob")

    def test_a_user_tracks_their_own_cgroup_only(self):
        mine, roots = Cgroup(self, "alice"), Cgroup(self, "root")
        uid = pwd.getpwnam(self.alice).pw_uid
        for root in mine.roots:
            os.chown(root + mine.path, uid, -1)
        p = spawn_as(self.alice, ["sleep", "30"])
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        for root in mine.roots:
            with open(root + mine.path + "/cgroup.procs", "w") as f:
                f.write(str(p.pid))
        (ok, reply), = call_as(self.alice, self.d.socket, "StartJob", {"cgroup": mine.path})
        self.assertEqual((ok, reply["job"]["owner_uid"]), ("ok", uid))
        (err, name, params), = call_as(self.alice, self.d.socket, "StartJob", {"cgroup": roots.path})
        self.assertEqual(name, "com.sparecores.ResourceTracker.PermissionDenied")
        # Another user's process in a cgroup of theirs: refused too.
        q = spawn_as(self.bob, ["sleep", "30"])
        self.addCleanup(q.wait)
        self.addCleanup(q.kill)
        with open(V2 + mine.path + "/cgroup.procs", "w") as f:
            f.write(str(q.pid))
        (err, name, params), = call_as(self.alice, self.d.socket, "StartJob", {"cgroup": mine.path})
        self.assertEqual(name, "com.sparecores.ResourceTracker.PermissionDenied")
        self.assertIn("another user's process", params["reason"])

    def test_another_users_container_reads_as_none(self):
        # A docker container (systemd driver) made by hand, as test_cgroup.py does.
        cid = "5eed%08x" % os.getpid() + "1" * 52
        scope = "/system.slice/docker-%s.scope" % cid
        for root in [V2] + list(V1.values()):
            if not os.path.isdir(root + "/system.slice"):
                self.addCleanup(lambda d=root + "/system.slice": os.path.isdir(d) and os.rmdir(d))
        self.addCleanup(remove_cgroup, scope)
        for root in [V2] + list(V1.values()):
            os.makedirs(root + scope)
        p = subprocess.Popen(["sleep", "30"])
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        for root in [V2] + list(V1.values()):
            with open(root + scope + "/cgroup.procs", "w") as f:
                f.write(str(p.pid))
        replies = [call_as(self.alice, self.d.socket, "StartJob", {"container": c})[0]
                   for c in (cid[:12], "5eed" + "f" * 12)]
        self.assertEqual([r[1] for r in replies], ["com.sparecores.ResourceTracker.NoSuchCgroup"] * 2)
        self.assertEqual(replies[0][2]["reason"], replies[1][2]["reason"], "whether it exists must not show")
        job = self.d.call("StartJob", {"container": cid[:12]})["job"]
        self.assertEqual(job["tracking"], {"kind": "cgroup", "cgroup": scope, "why": None, "adopted": False})

if __name__ == "__main__":
    unittest.main(verbosity=2)
