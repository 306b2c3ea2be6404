"""Who holds each GPU: the daemon with the fake libnvidia-ml.so.1 lists every
process on every GPU under its real user and job (GetGpus, `gpus`), flags a
GPU idle but held once gpu.idle_after has passed (one journal record) and
never a busy one, names another user's job to nobody but them and
administrators, and hides what /proc hides (hidepid)."""
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import Daemon, UsersTest, call_as, run_ctl, spawn_as, wait_for  # noqa: E402

GIB = 1 << 30
IDLE_AFTER = 2.0


def fake_dir():
    fake = os.environ.get("RT_FAKE_NVML_DIR")
    if not fake or not os.path.exists(os.path.join(fake, "libnvidia-ml.so.1")):
        raise AssertionError("RT_FAKE_NVML_DIR does not hold the fake libnvidia-ml.so.1")
    return fake


def write_atomic(path, text):
    with open(path + ".new", "w") as f:
        f.write(text)
    os.rename(path + ".new", path)


class GpuHolders(UsersTest):
    """GPU 0 (no use): alice's untracked process and her job's, 2 GiB each;
    GPU 1 (90 % busy): bob's job and a small process of alice."""

    roles = ("alice", "bob")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="rt-gpus-")
        os.chmod(cls.tmp, 0o755)
        cls.addClassCleanup(subprocess.run, ["rm", "-rf", cls.tmp])
        cls.procs = []
        cls.addClassCleanup(cls.stop_procs)
        cls.a_free = cls.sleeper(cls.alice)   # untracked, idle GPU 0
        cls.a_job = cls.sleeper(cls.alice)    # alice's job, idle GPU 0
        cls.a_small = cls.sleeper(cls.alice)  # untracked, busy GPU 1
        cls.b_job = cls.sleeper(cls.bob)      # bob's job, busy GPU 1
        cls.nvml = os.path.join(cls.tmp, "nvml.conf")
        write_atomic(cls.nvml,
                     "device\nname=NVIDIA H100 80GB HBM3\nuuid=GPU-idle\nutil=0\nmem_total=%d\nmem_used=%d\n"
                     "process\npid=%d\nvram=%d\nsm=0\n"
                     "process\npid=%d\nvram=%d\nsm=0\n"
                     "device\nname=NVIDIA H100 80GB HBM3\nuuid=GPU-busy\nutil=90\nmem_total=%d\nmem_used=%d\n"
                     "process\npid=%d\nvram=%d\nsm=85\n"
                     "process\npid=%d\nvram=%d\nsm=5\n"
                     % (80 * GIB, 4 * GIB, cls.a_free.pid, 2 * GIB, cls.a_job.pid, 2 * GIB,
                        80 * GIB, 9 * GIB, cls.b_job.pid, 8 * GIB, cls.a_small.pid, GIB // 2))
        conf = os.path.join(cls.tmp, "rt.conf")
        with open(conf, "w") as f:
            f.write('gpu: { idle_after = "%gs"; idle_util_max = 5; idle_vram_min = "1G"; };\n' % IDLE_AFTER)
        cls.d = Daemon(interval=0.25, args=["--config", conf],
                       env={"LD_LIBRARY_PATH": fake_dir(), "FAKE_NVML_CONFIG": cls.nvml})
        cls.addClassCleanup(cls.d.cleanup)
        cls.d.start()
        cls.addClassCleanup(cls.d.stop)
        cls.started = time.time()
        wait_for(lambda: len(cls.d.call("com.sparecores.ResourceTracker.GetGpus")["gpus"]) == 2, what="the GPUs")
        cls.job_a = cls.start_job(cls.alice, cls.a_job.pid, "idler")
        cls.job_b = cls.start_job(cls.bob, cls.b_job.pid, "train")

    @classmethod
    def sleeper(cls, user):
        p = spawn_as(user, ["sleep", "600"])
        cls.procs.append(p)
        return p

    @classmethod
    def stop_procs(cls):
        for p in cls.procs:
            p.kill()
            p.wait()

    @classmethod
    def start_job(cls, user, pid, name):
        r = call_as(user, cls.d.socket, "com.sparecores.ResourceTracker.StartJob", {"pid": pid, "name": name})
        assert r[0][0] == "ok", r
        return r[0][1]["job"]["id"]

    def gpus_as(self, user):
        r = call_as(user, self.d.socket, "com.sparecores.ResourceTracker.GetGpus")
        self.assertEqual(r[0][0], "ok", r)
        return r[0][1]

    @staticmethod
    def by_pid(gpu):
        return {p["pid"]: p for p in gpu["processes"]}

    def wait_flagged(self):
        return wait_for(lambda: (lambda g: g["gpus"][0]["idle"] and g)(self.d.call(
            "com.sparecores.ResourceTracker.GetGpus")), timeout=30, what="GPU 0 flagged idle")

    def test_every_process_under_its_user_and_job(self):
        import pwd
        alice, bob = pwd.getpwnam(self.alice).pw_uid, pwd.getpwnam(self.bob).pw_uid
        # the jobs' processes are known from their first sample on
        g = wait_for(lambda: (lambda g: self.by_pid(g["gpus"][1])[self.b_job.pid]["job_id"] and g)(
            self.d.call("com.sparecores.ResourceTracker.GetGpus")), what="bob's job on GPU 1")
        self.assertTrue(g["all_processes_shown"])
        g0, g1 = g["gpus"]
        self.assertEqual((g0["uuid"], g1["uuid"]), ("GPU-idle", "GPU-busy"))
        p0, p1 = self.by_pid(g0), self.by_pid(g1)
        self.assertEqual(set(p0), {self.a_free.pid, self.a_job.pid})
        self.assertEqual(p0[self.a_free.pid]["uid"], alice)
        self.assertIsNone(p0[self.a_free.pid]["job_id"])  # untracked
        self.assertEqual((p0[self.a_job.pid]["job_id"], p0[self.a_job.pid]["job_name"]), (self.job_a, "idler"))
        self.assertEqual(p0[self.a_job.pid]["vram_bytes"], 2 * GIB)
        self.assertEqual((p1[self.b_job.pid]["uid"], p1[self.b_job.pid]["job_id"]), (bob, self.job_b))
        self.assertEqual(p1[self.b_job.pid]["sm_pct"], 85.0)
        for p in p0.values():
            self.assertGreaterEqual(p["since"], self.started - 1)
            self.assertFalse(p["hidden"])
        # alice sees bob's process (/proc shows it to her) but not his job
        mine = self.gpus_as(self.alice)
        pb = self.by_pid(mine["gpus"][1])[self.b_job.pid]
        self.assertEqual((pb["uid"], pb["job_id"], pb["job_name"], pb["hidden"]), (bob, None, None, False))
        self.assertEqual(self.by_pid(mine["gpus"][0])[self.a_job.pid]["job_id"], self.job_a)
        self.assertEqual(self.by_pid(self.gpus_as(self.bob)["gpus"][1])[self.b_job.pid]["job_id"], self.job_b)

    def test_idle_but_held_flagged_once_busy_never(self):
        g = self.wait_flagged()
        records = self.d.read_log().count("GPU 0 idle but held")
        self.assertGreaterEqual(records, 1)
        self.assertGreaterEqual(time.time() - self.started, IDLE_AFTER)
        g0, g1 = g["gpus"]
        self.assertEqual(g0["vram_held_bytes"], 4 * GIB)
        self.assertGreaterEqual(g0["idle_since"], self.started - 1)
        self.assertLessEqual(g0["idle_since"], time.time() - IDLE_AFTER + 0.5)
        time.sleep(2 * IDLE_AFTER)  # long past idle_after: the busy one is still not flagged
        g = self.d.call("com.sparecores.ResourceTracker.GetGpus")
        self.assertTrue(g["gpus"][0]["idle"])
        self.assertIs(g["gpus"][1]["idle"], False)
        log = self.d.read_log()
        self.assertEqual(log.count("GPU 0 idle but held"), records, log[-3000:])  # once per idle spell
        self.assertNotIn("GPU 1 idle", log)
        self.assertRegex(log, r"GPU 0 idle but held: nvidia NVIDIA H100 80GB HBM3 \(GPU-idle\): 4\.0 GiB held, "
                              r"use at most 5%% for \d+\.\ds; held by uid \d+; jobs: %d \(idler\)" % self.job_a)
        # alice's job says so; bob's does not
        ja = self.d.call("com.sparecores.ResourceTracker.GetJob", {"id": self.job_a})["job"]
        self.assertEqual([(i["kind"], i["uuid"], i["index"]) for i in ja["gpu_idle"]], [("held", "GPU-idle", 0)])
        jb = self.d.call("com.sparecores.ResourceTracker.GetJob", {"id": self.job_b})["job"]
        self.assertEqual(jb["gpu_idle"], [])
        # and `gpus` for people, as alice
        _, out, _ = run_ctl(self.d, "gpus", user=self.alice, check=0)
        self.assertRegex(out, r"GPU 0  NVIDIA H100 80GB HBM3  GPU-idle\n    0% busy, VRAM 4\.00 GiB of 80\.0 GiB, .*\n"
                              r"    idle but held since \d\d:\d\d:\d\d \([^)]+ ago\), 4\.00 GiB held\n")
        self.assertRegex(out, r"\n    %d +%s +- +2\.00 GiB +0%%  " % (self.a_free.pid, self.alice))
        self.assertRegex(out, r"\n    %d +%s +%d idler +2\.00 GiB +0%%  " % (self.a_job.pid, self.alice,
                                                                            self.job_a))
        self.assertRegex(out, r"\n    %d +%s +- +8\.00 GiB +85%%  " % (self.b_job.pid, self.bob))

    def test_back_in_use_is_no_longer_idle(self):
        self.wait_flagged()
        records = self.d.read_log().count("GPU 0 idle but held")
        with open(self.nvml) as f:
            text = f.read()
        write_atomic(self.nvml, text.replace("uuid=GPU-idle\nutil=0", "uuid=GPU-idle\nutil=60"))
        try:
            wait_for(lambda: self.d.call("com.sparecores.ResourceTracker.GetGpus")["gpus"][0]["idle"] is False,
                     what="GPU 0 busy again")
            self.assertEqual(self.d.call("com.sparecores.ResourceTracker.GetJob", {"id": self.job_a})["job"]
                             ["gpu_idle"], [])
        finally:
            write_atomic(self.nvml, text)
        # idle again: a new spell, a new record
        self.wait_flagged()
        self.assertEqual(self.d.read_log().count("GPU 0 idle but held"), records + 1)


class HiddenProcesses(UsersTest):
    """The daemon on a proc mount with hidepid=invisible,gid=G: alice sees her
    process and bob's only as hidden; carol, in G, and root see both."""

    roles = ("alice", "bob")

    @classmethod
    def add_users(cls):
        super().add_users()
        cls.gid = cls.users.group("procview")
        cls.carol = cls.users.user("carol", groups=[cls.users.groups[-1]])

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="rt-hidepid-")
        os.chmod(cls.tmp, 0o755)
        cls.addClassCleanup(subprocess.run, ["rm", "-rf", cls.tmp])
        cls.proc = os.path.join(cls.tmp, "proc")
        os.mkdir(cls.proc)
        subprocess.run(["mount", "-t", "proc", "-o", "hidepid=invisible,gid=%d" % cls.gid, "proc", cls.proc],
                       check=True)
        cls.addClassCleanup(subprocess.run, ["umount", cls.proc])
        cls.a = spawn_as(cls.alice, ["sleep", "600"])
        cls.b = spawn_as(cls.bob, ["sleep", "600"])
        cls.addClassCleanup(lambda: [(p.kill(), p.wait()) for p in (cls.a, cls.b)])
        nvml = os.path.join(cls.tmp, "nvml.conf")
        write_atomic(nvml, "device\nname=NVIDIA L4\nuuid=GPU-l4\nutil=50\nmem_total=%d\nmem_used=%d\n"
                           "process\npid=%d\nvram=%d\nsm=20\nprocess\npid=%d\nvram=%d\nsm=30\n"
                     % (24 * GIB, 3 * GIB, cls.a.pid, GIB, cls.b.pid, 2 * GIB))
        cls.d = Daemon(interval=0.25, args=["--proc-root", cls.proc],
                       env={"LD_LIBRARY_PATH": fake_dir(), "FAKE_NVML_CONFIG": nvml})
        cls.addClassCleanup(cls.d.cleanup)
        cls.d.start()
        cls.addClassCleanup(cls.d.stop)
        wait_for(lambda: len(cls.d.call("com.sparecores.ResourceTracker.GetGpus")["gpus"]) == 1, what="the GPU")

    def gpus_as(self, user):
        r = call_as(user, self.d.socket, "com.sparecores.ResourceTracker.GetGpus")
        self.assertEqual(r[0][0], "ok", r)
        return r[0][1]

    def test_hidden_from_others(self):
        import pwd
        g = self.gpus_as(self.alice)
        self.assertFalse(g["all_processes_shown"])
        procs = sorted(g["gpus"][0]["processes"], key=lambda p: p["vram_bytes"])
        self.assertEqual((procs[0]["pid"], procs[0]["uid"], procs[0]["hidden"]),
                         (self.a.pid, pwd.getpwnam(self.alice).pw_uid, False))
        self.assertEqual((procs[1]["pid"], procs[1]["uid"], procs[1]["job_id"], procs[1]["hidden"]),
                         (None, None, None, True))
        self.assertEqual((procs[1]["vram_bytes"], procs[1]["sm_pct"]), (2 * GIB, 30.0))  # the GPU's own figures
        _, out, _ = run_ctl(self.d, "gpus", user=self.alice, check=0)
        self.assertRegex(out, r"\n    - +\(hidden\) +- +2\.00 GiB +30%  ")
        self.assertIn("(/proc hides other users' processes from you: theirs are listed as hidden)", out)
        # the proc mount's gid= group, and root, see everyone
        for who in (self.carol, None):
            g = self.gpus_as(who) if who else self.d.call("com.sparecores.ResourceTracker.GetGpus")
            self.assertTrue(g["all_processes_shown"])
            self.assertEqual(sorted(p["pid"] for p in g["gpus"][0]["processes"]), sorted([self.a.pid, self.b.pid]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
