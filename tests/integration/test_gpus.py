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
from rtlib import Daemon, HandCgroup, UsersTest, call_as, run_ctl, spawn_as, wait_for  # noqa: E402

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
                              r"use at most 5%% for \d+\.\ds; held by uid \d+; job %d \(idler\)" % self.job_a)
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


class CgroupJobOnGpu(unittest.TestCase):
    """A cgroup job's processes are its cgroup's: one started in it after
    the job began is the job's on the GPU, and the job's GPU figures count it."""

    def test_its_cgroups_process_is_the_jobs(self):
        tmp = tempfile.mkdtemp(prefix="rt-cg-gpu-")
        self.addCleanup(subprocess.run, ["rm", "-rf", tmp])
        nvml = os.path.join(tmp, "nvml.conf")
        write_atomic(nvml, "device\nname=NVIDIA H100\nuuid=GPU-0\nutil=60\nmem_total=%d\nmem_used=0\n" % (80 * GIB))
        d = Daemon(interval=0.25, env={"LD_LIBRARY_PATH": fake_dir(), "FAKE_NVML_CONFIG": nvml})
        self.addCleanup(d.cleanup)
        d.start()
        self.addCleanup(d.stop)
        wait_for(lambda: d.call("com.sparecores.ResourceTracker.GetGpus")["gpus"], what="the GPU")
        cg = HandCgroup(self, "gpu")
        first = cg.spawn("sleep", "600")
        self.addCleanup(lambda: (first.kill(), first.wait()))
        job = d.call("com.sparecores.ResourceTracker.StartJob", {"cgroup": cg.path})["job"]["id"]
        later = cg.spawn("sleep", "600")  # joins after the job began: no tree would hold it
        self.addCleanup(lambda: (later.kill(), later.wait()))
        outside = subprocess.Popen(["sleep", "600"])
        self.addCleanup(lambda: (outside.kill(), outside.wait()))
        write_atomic(nvml, "device\nname=NVIDIA H100\nuuid=GPU-0\nutil=60\nmem_total=%d\nmem_used=%d\n"
                     "process\npid=%d\nvram=%d\nsm=55\nprocess\npid=%d\nvram=%d\nsm=5\n"
                     % (80 * GIB, 3 * GIB, later.pid, 2 * GIB, outside.pid, GIB))

        def on_gpu():
            procs = {p["pid"]: p for p in d.call("com.sparecores.ResourceTracker.GetGpus")["gpus"][0]["processes"]}
            return len(procs) == 2 and procs[later.pid]["job_id"] is not None and procs
        procs = wait_for(on_gpu, what="the cgroup's process under its job")
        self.assertEqual(procs[later.pid]["job_id"], job)
        self.assertIsNone(procs[outside.pid]["job_id"])  # in no job's cgroup
        j = wait_for(lambda: (lambda j: (j["summary"].get("gpu_avg_held") or 0) > 0 and j)(
            d.call("com.sparecores.ResourceTracker.GetJob", {"id": job})["job"]), what="the job on its GPU")
        self.assertEqual(j["tracking"]["kind"], "cgroup")
        self.assertEqual(j["summary"]["gpus"], ["GPU-0"])


class RunGpus(unittest.TestCase):
    """run --gpus N against three GPUs: 0 and 2 busy, 1 free."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rt-run-gpus-")
        cls.addClassCleanup(subprocess.run, ["rm", "-rf", cls.tmp])
        cls.nvml = os.path.join(cls.tmp, "nvml.conf")
        write_atomic(cls.nvml,
                     "device\nname=NVIDIA H100\nuuid=GPU-busy0\nutil=90\nmem_total=%d\nmem_used=%d\n"
                     "process\npid=1\nvram=%d\nsm=90\n"
                     "device\nname=NVIDIA H100\nuuid=GPU-free1\nutil=0\nmem_total=%d\nmem_used=0\n"
                     "device\nname=NVIDIA H100\nuuid=GPU-free3\nutil=0\nmem_total=%d\nmem_used=0\n"
                     "device\nname=NVIDIA H100\nuuid=GPU-busy2\nutil=50\nmem_total=%d\nmem_used=%d\n"
                     "process\npid=1\nvram=%d\nsm=50\n"
                     % (80 * GIB, 40 * GIB, 40 * GIB, 80 * GIB, 40 * GIB, 80 * GIB, GIB, GIB))
        conf = os.path.join(cls.tmp, "rt.conf")
        with open(conf, "w") as f:
            f.write('gpu: { idle_after = "1s"; };\n')
        cls.d = Daemon(interval=0.25, args=["--config", conf],
                       env={"LD_LIBRARY_PATH": fake_dir(), "FAKE_NVML_CONFIG": cls.nvml})
        cls.addClassCleanup(cls.d.cleanup)
        cls.d.start()
        cls.addClassCleanup(cls.d.stop)
        wait_for(lambda: len(cls.d.call("com.sparecores.ResourceTracker.GetGpus")["gpus"]) == 4, what="the GPUs")

    def run_gpus(self, n, *cmd):
        return run_ctl(self.d, "run", "-q", "--gpus", str(n), "--", *cmd, check=0)

    def test_lands_on_a_free_gpu_every_time(self):
        got = {}
        for _ in range(100):
            _, out, err = self.run_gpus(1, "sh", "-c", "echo $CUDA_VISIBLE_DEVICES")
            self.assertEqual(err, "")
            got[out.strip()] = got.get(out.strip(), 0) + 1
        self.assertEqual(got, {"GPU-free1": 100})  # free, and the first of the two by index

    def test_two_at_once_get_different_gpus(self):
        # two jobs running at once: the second is not given the first's GPU
        outs = [os.path.join(self.tmp, "o%d" % i) for i in range(2)]
        procs = [subprocess.Popen([os.environ["RT_CTL"], "run", "-q", "--gpus", "1", "--", "sh", "-c",
                                   "echo $CUDA_VISIBLE_DEVICES > %s; sleep 2" % o],
                                  env=dict(os.environ, RESOURCE_TRACKER_SOCKET=self.d.socket)) for o in outs]
        for p in procs:
            self.assertEqual(p.wait(timeout=60), 0)
        got = []
        for o in outs:
            with open(o) as f:
                got.append(f.read().strip())
        got.sort()
        self.assertEqual(got, ["GPU-free1", "GPU-free3"])

    def test_fewer_free_than_asked(self):
        _, out, err = self.run_gpus(3, "sh", "-c", "echo $CUDA_VISIBLE_DEVICES")
        self.assertEqual(out.strip(), "GPU-free1,GPU-free3,GPU-busy2")  # then the most free memory
        self.assertEqual(err, "resource-trackerctl: warn: --gpus 3: only some are free; the least busy of the "
                              "others: GPU 3 (GPU-busy2)\n")
        _, out, err = self.run_gpus(5, "sh", "-c", "echo $CUDA_VISIBLE_DEVICES")
        self.assertEqual(out.strip(), "GPU-free1,GPU-free3,GPU-busy2,GPU-busy0")
        self.assertIn("warn: --gpus 5: the host has 4; the command gets them all\n", err)

    def test_a_given_gpu_left_unused_is_said(self):
        # the command never uses its GPU (the fake lists no process of it)
        _, out, err = run_ctl(self.d, "run", "-q", "--gpus", "1", "-n", "lazy", "--", "sleep", "4", check=0)
        self.assertRegex(err, r"^resource-trackerctl: warn: GPU 1 \(GPU-free1\) was given to this job and none of "
                              r"its processes has used it since \d\d:\d\d:\d\d\n$")
        job = self.d.call("com.sparecores.ResourceTracker.GetJob", {"name": "lazy"})["job"]
        self.assertEqual(job["gpus_assigned"], ["GPU-free1"])
        self.assertIsNone(job["gpu_idle"])  # it has ended
        self.assertRegex(self.d.read_log(), r"GPU 1 given to a job and unused: nvidia NVIDIA H100 \(GPU-free1\): "
                                            r"no process of the job on it for 1\.\ds; held by uid 0; job %d \(lazy\)"
                         % job["id"])


class RunGpusAmd(unittest.TestCase):
    """run --gpus on the AMD fixture: the idle (runtime-suspended) card, by its rank."""

    def test_hip_and_rocr_name_the_card(self):
        d = Daemon(interval=0.25, args=["--sys-root", os.path.join(os.environ["RT_FIXTURES"], "gpu/amd/sys")],
                   env={"FAKE_NVML_CONFIG": "/nonexistent"})
        self.addCleanup(d.cleanup)
        d.start()
        self.addCleanup(d.stop)
        wait_for(lambda: len(d.call("com.sparecores.ResourceTracker.GetGpus")["gpus"]) == 3, what="the AMD cards")
        _, out, err = run_ctl(d, "run", "-q", "--gpus", "1", "--", "sh", "-c",
                              "echo $HIP_VISIBLE_DEVICES $ROCR_VISIBLE_DEVICES ${CUDA_VISIBLE_DEVICES-unset}",
                              check=0)
        self.assertEqual((out, err), ("2 2 unset\n", ""))


class Usage(UsersTest):
    """Usage per user, name and job covers every GPU process: alice's job and
    her process in no job, bob's process in no job; the ledger of processes
    in no job survives a restart."""

    roles = ("alice", "bob")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="rt-usage-")
        os.chmod(cls.tmp, 0o755)
        cls.addClassCleanup(subprocess.run, ["rm", "-rf", cls.tmp])
        cls.procs = [spawn_as(u, ["sleep", "600"]) for u in (cls.alice, cls.alice, cls.bob)]
        cls.addClassCleanup(lambda: [(p.kill(), p.wait()) for p in cls.procs])
        cls.a_free, cls.a_job, cls.b_free = (p.pid for p in cls.procs)
        cls.nvml = os.path.join(cls.tmp, "nvml.conf")
        cls.device = ("device\nname=NVIDIA H100\nuuid=GPU-u\nutil=70\nmem_total=%d\nmem_used=%d\n"
                      "energy_mj=1000000\nenergy_step_mj=2000\n" % (80 * GIB, 8 * GIB))
        write_atomic(cls.nvml, cls.device +
                     "process\npid=%d\nvram=%d\nsm=40\nprocess\npid=%d\nvram=%d\nsm=20\n"
                     "process\npid=%d\nvram=%d\nsm=10\n"
                     % (cls.a_free, 2 * GIB, cls.a_job, 2 * GIB, cls.b_free, GIB))
        cls.state = os.path.join(cls.tmp, "state")
        cls.env = {"LD_LIBRARY_PATH": fake_dir(), "FAKE_NVML_CONFIG": cls.nvml}
        cls.d = Daemon(interval=0.25, state_dir=cls.state, env=cls.env)
        cls.addClassCleanup(lambda: cls.d.cleanup())
        cls.d.start()
        wait_for(lambda: len(cls.d.call("com.sparecores.ResourceTracker.GetGpus")["gpus"]) == 1, what="the GPU")
        r = call_as(cls.alice, cls.d.socket, "com.sparecores.ResourceTracker.StartJob",
                    {"pid": cls.a_job, "name": "trainer"})
        cls.job = r[0][1]["job"]["id"]
        time.sleep(3)
        # freeze everything: the job stops, the processes leave the GPU
        cls.d.call("com.sparecores.ResourceTracker.StopJob", {"id": cls.job})
        write_atomic(cls.nvml, cls.device)
        wait_for(lambda: cls.d.call("com.sparecores.ResourceTracker.GetGpus")["gpus"][0]["processes"] == [],
                 what="the processes gone from the GPU")
        time.sleep(0.6)  # a tick past it

    def usage(self, by, user=None, **params):
        params["by"] = by
        if user is None:
            return self.d.call("com.sparecores.ResourceTracker.GetUsage", params)["rows"]
        r = call_as(user, self.d.socket, "com.sparecores.ResourceTracker.GetUsage", params)
        return r[0][1]["rows"] if r[0][0] == "ok" else r[0]

    FIELDS = ("gpu_held_secs", "gpu_busy_secs", "gpu_idle_secs", "cpu_secs", "memory_byte_secs", "energy_joules")

    def test_user_sums_are_the_jobs_plus_the_untracked(self):
        import pwd
        alice, bob = pwd.getpwnam(self.alice).pw_uid, pwd.getpwnam(self.bob).pw_uid
        by_job = self.usage("job")
        by_user = {r["uid"]: r for r in self.usage("user")}
        self.assertEqual(sorted(by_user), sorted([alice, bob]))
        for uid, row in by_user.items():
            parts = [r for r in by_job if r["uid"] == uid]
            for f in self.FIELDS:  # each row is rounded: to 3 decimals, byte-seconds to 0
                tolerance = (1 if f == "memory_byte_secs" else 0.002) * len(parts) + 1e-9
                self.assertAlmostEqual(row[f], sum(p[f] for p in parts), delta=tolerance,
                                       msg="%s of uid %d" % (f, uid))
        # alice: her process in no job, and her job, whose row is its own totals
        a_rows = [r for r in by_job if r["uid"] == alice]
        self.assertEqual([(r["untracked"], r["job_id"], r["name"]) for r in a_rows],
                         [(True, None, None), (False, self.job, "trainer")])
        free, job_row = a_rows
        job = self.d.call("com.sparecores.ResourceTracker.GetJob", {"id": self.job})["job"]
        s = job["summary"]
        self.assertAlmostEqual(job_row["cpu_secs"], s["cpu_secs"], delta=0.0015)
        self.assertAlmostEqual(job_row["energy_joules"], s["gpu_energy_joules"], delta=0.0015)
        gpu_secs = job_row["gpu_held_secs"] / s["gpu_avg_held"]  # the time it was sampled on a GPU
        self.assertAlmostEqual(job_row["gpu_busy_secs"], s["gpu_avg_usage"] * gpu_secs, delta=0.01)
        self.assertEqual(s["gpu_avg_held"], 1.0)   # one GPU all along
        self.assertAlmostEqual(s["gpu_avg_usage"], 0.2, places=3)
        self.assertGreater(job_row["energy_joules"], 0)
        # in no job: one GPU held all along, busy 40 % of it, a share of the energy
        self.assertGreater(free["gpu_held_secs"], 2)
        self.assertAlmostEqual(free["gpu_busy_secs"], 0.4 * free["gpu_held_secs"], delta=0.01)
        self.assertGreater(free["energy_joules"], 0)
        self.assertGreater(free["memory_byte_secs"], 0)
        b = [r for r in by_job if r["uid"] == bob][0]
        self.assertAlmostEqual(b["gpu_busy_secs"], 0.1 * b["gpu_held_secs"], delta=0.01)
        # the GPU's energy is shared by use: 40 : 20 : 10 while all three were on it
        self.assertAlmostEqual(free["energy_joules"] / b["energy_joules"], 4, delta=0.3)
        # by name: the job's name, and the processes in no job
        names = [(r["untracked"], r["name"], r["jobs"]) for r in self.usage("name") if r["uid"] == alice]
        self.assertEqual(names, [(True, None, 0), (False, "trainer", 1)])

    def test_each_user_sees_their_own(self):
        import pwd
        alice = pwd.getpwnam(self.alice).pw_uid
        self.assertEqual({r["uid"] for r in self.usage("job", self.alice)}, {alice})
        self.assertEqual(self.usage("user", self.bob, owner_uid=alice)[:2],
                         ("error", "com.sparecores.ResourceTracker.PermissionDenied"))
        self.assertEqual([r["uid"] for r in self.usage("user", owner_uid=alice)], [alice])  # root, for one user
        _, out, _ = run_ctl(self.d, "usage", "--by", "job", user=self.alice, check=0)
        lines = out.splitlines()
        self.assertTrue(lines[0].startswith("USER             JOB                      GPU-H HELD GPU-H BUSY"), out)
        self.assertRegex(lines[1], r"^%s +\(in no job\) " % self.alice)
        self.assertRegex(lines[2], r"^%s +%d trainer " % (self.alice, self.job))
        self.assertEqual(len(lines), 3)

    def test_kept_across_a_restart(self):
        before = self.usage("job")
        self.d.stop()
        self.d = type(self).d = Daemon(interval=0.25, state_dir=self.state, env=self.env).start()
        self.assertEqual(self.usage("job"), before)
        with open(os.path.join(self.state, "gpu-usage.json")) as f:
            self.assertIn('"untracked":[', f.read())


class HealthDuringJob(UsersTest):
    """A job's GPU turns sick while it runs: an XID (one journal record naming
    the job and GPU), ECC errors, a retired page, clocks held down by power;
    GPM says its SMs are idle while the GPU is busy (busy but stalled)."""

    roles = ("alice",)

    def test_health_in_the_summary(self):
        tmp = tempfile.mkdtemp(prefix="rt-health-")
        self.addCleanup(subprocess.run, ["rm", "-rf", tmp])
        p = spawn_as(self.alice, ["sleep", "600"])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        nvml = os.path.join(tmp, "nvml.conf")
        healthy = ("device\nname=NVIDIA H100 80GB HBM3\nuuid=GPU-h\nutil=97\nmem_total=%d\nmem_used=%d\n"
                   "gpm=1\ngpm_sm=60\ngpm_occ=30\ngpm_tensor=20\ngpm_dram=10\n"
                   "ecc_corrected=5\necc_uncorrected=0\nretired_sbe=1\nretired_dbe=0\nreasons=0\n%%s"
                   "process\npid=%d\nvram=%d\nsm=97\n" % (80 * GIB, 4 * GIB, p.pid, 2 * GIB))
        write_atomic(nvml, healthy % "")
        d = Daemon(interval=0.25, env={"LD_LIBRARY_PATH": fake_dir(), "FAKE_NVML_CONFIG": nvml})
        self.addCleanup(d.cleanup)
        d.start()
        self.addCleanup(d.stop)
        wait_for(lambda: len(d.call("com.sparecores.ResourceTracker.GetGpus")["gpus"]) == 1, what="the GPU")
        job = call_as(self.alice, d.socket, "com.sparecores.ResourceTracker.StartJob",
                      {"pid": p.pid, "name": "sick"})[0][1]["job"]["id"]
        summary = lambda: d.call("com.sparecores.ResourceTracker.GetJob", {"id": job})["job"]["summary"]
        wait_for(lambda: summary()["samples"] >= 3, what="the job's samples")
        s = summary()
        self.assertEqual((s["gpu_xid_errors"], s["gpu_ecc_errors"]["corrected"], s["gpu_pages_retired"]), (0, 0, 0))
        self.assertEqual(s["gpu_stalled_pct"], 0.0)
        # sick: an XID, 3 more corrected and 1 uncorrected ECC error, a page
        # retired, power capping, and the SMs stop while the GPU stays busy
        write_atomic(nvml, healthy.replace("ecc_corrected=5\necc_uncorrected=0\nretired_sbe=1\nretired_dbe=0\n"
                                           "reasons=0", "ecc_corrected=8\necc_uncorrected=1\nretired_sbe=1\n"
                                           "retired_dbe=1\nreasons=0x4").replace("gpm_sm=60", "gpm_sm=2")
                     % "xids=79\n")
        wait_for(lambda: summary()["gpu_xid_errors"] == 1, what="the XID in the job's summary")
        wait_for(lambda: summary()["gpu_clocks_held"]["power_secs"] > 0.5, what="time held down by power")
        d.call("com.sparecores.ResourceTracker.StopJob", {"id": job})
        s = summary()
        self.assertEqual(s["gpu_xid_errors"], 1)
        self.assertEqual((s["gpu_ecc_errors"]["corrected"], s["gpu_ecc_errors"]["uncorrected"]), (3, 1))
        self.assertEqual(s["gpu_pages_retired"], 1)
        self.assertEqual((s["gpu_clocks_held"]["thermal_secs"], s["gpu_clocks_held"]["hw_slowdown_secs"]),
                         (0.0, 0.0))
        self.assertGreater(s["gpu_stalled_pct"], 0)
        self.assertLess(s["gpu_stalled_pct"], 100)
        self.assertGreater(s["gpm"]["sm_active_pct"], 2)
        self.assertLess(s["gpm"]["sm_active_pct"], 60)
        self.assertEqual((s["gpm"]["sm_occupancy_pct"], s["gpm"]["tensor_active_pct"], s["gpm"]["dram_bw_pct"]),
                         (30.0, 20.0, 10.0))
        log = d.read_log()
        self.assertEqual(log.count("XID error"), 1, log[-3000:])
        self.assertRegex(log, r"GPU 0 XID error: nvidia NVIDIA H100 80GB HBM3 \(GPU-h\): XID 79 during job %d "
                              r"\(sick\)" % job)
        _, out, _ = run_ctl(d, "status", str(job), user=self.alice, check=0)
        self.assertRegex(out, r"\nGPU health +1 XID error, ECC errors 3 corrected, 1 uncorrected, 1 page retired; "
                              r"clocks held down by power [\d.]+s; busy but stalled [\d.]+% of the time\n")
        self.assertRegex(out, r"\nGPM +SM active [\d.]+%, occupancy 30\.0%, tensor 20\.0%, DRAM bandwidth 10\.0%\n")

    def test_unsupported_figures_are_null(self):
        tmp = tempfile.mkdtemp(prefix="rt-health-")
        self.addCleanup(subprocess.run, ["rm", "-rf", tmp])
        p = spawn_as(self.alice, ["sleep", "600"])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        nvml = os.path.join(tmp, "nvml.conf")
        write_atomic(nvml, "device\nname=NVIDIA T4\nuuid=GPU-t\nutil=30\nmem_total=%d\nmem_used=%d\n"
                           "ret.ecc=3\nret.pages=3\nret.remap=3\nret.reasons=3\nret.events=3\n"
                           "process\npid=%d\nvram=%d\nsm=30\n" % (16 * GIB, GIB, p.pid, GIB))
        d = Daemon(interval=0.25, env={"LD_LIBRARY_PATH": fake_dir(), "FAKE_NVML_CONFIG": nvml})
        self.addCleanup(d.cleanup)
        d.start()
        self.addCleanup(d.stop)
        wait_for(lambda: len(d.call("com.sparecores.ResourceTracker.GetGpus")["gpus"]) == 1, what="the GPU")
        job = call_as(self.alice, d.socket, "com.sparecores.ResourceTracker.StartJob", {"pid": p.pid})[0][1]["job"]
        wait_for(lambda: d.call("com.sparecores.ResourceTracker.GetJob", {"id": job["id"]})["job"]["summary"]
                 ["samples"] >= 3, what="samples")
        s = d.call("com.sparecores.ResourceTracker.GetJob", {"id": job["id"]})["job"]["summary"]
        self.assertAlmostEqual(s["gpu_avg_usage"], 0.3, places=3)
        for k in ("gpu_xid_errors", "gpu_pages_retired", "gpu_stalled_pct"):
            self.assertIsNone(s[k], k)
        self.assertEqual(s["gpu_ecc_errors"], {"corrected": None, "uncorrected": None})
        self.assertEqual(set(s["gpm"].values()), {None})
        self.assertEqual(set(s["gpu_clocks_held"].values()), {None})
        g = d.call("com.sparecores.ResourceTracker.GetGpus")["gpus"][0]
        self.assertIsNone(g["gpm"])
        self.assertIsNone(g["busy_but_stalled"])
        self.assertEqual({k: v for k, v in g["health"].items() if v is not None}, {})


if __name__ == "__main__":
    unittest.main(verbosity=2)
