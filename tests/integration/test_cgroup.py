"""The cgroup layer (daemon/cgroup/) on this host's real cgroups, through
tests/tools/rt_cgroup: cgroups made in the v2 tree and the v1 hierarchies
(the hybrid rule: one path in each), CPU and CPU pressure of burners, the end
seen through inotify, a v1 memory limit that OOM-kills, a v1-only cgroup as
Slurm's v1 plugin makes them, I/O through v1 blkio, and a cgroup removed
under an open handle; container and Slurm layouts made by hand, found and
recognised. Every cgroup made here is /rt-test-PID-NAME, /slurm_rtPID or
/system.slice/docker-5eedPID….scope in each hierarchy, removed by the test
(and by the next run when a run crashed).
Root only; what this host lacks (a v2 tree, a v1 memory hierarchy) skips."""

import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import TOOLS, wait_for  # noqa: E402

TOOL = os.path.join(TOOLS, "rt_cgroup")
PREFIX = "rt-test-"


def tool(*args, check=True):
    p = subprocess.run([TOOL] + [str(a) for a in args], capture_output=True, text=True, timeout=60)
    if check and p.returncode != 0:
        raise AssertionError("rt_cgroup %s: exit %d: %s" % (" ".join(map(str, args)), p.returncode, p.stderr))
    return p


def tool_json(*args):
    return json.loads(tool(*args).stdout)


MOUNTS = tool_json("mounts") if os.geteuid() == 0 and os.path.exists(TOOL) else {"mode": "none", "mounts": {}}


def read(path):
    with open(path) as f:
        return f.read()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def hier_dir(hier, path):
    point = MOUNTS["mounts"].get(hier)
    return point + path if point else None


def swap_total():
    return int(re.search(r"^SwapTotal:\s+(\d+)", read("/proc/meminfo"), re.M).group(1))


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def rmdir_tree(d):
    for sub in sorted((p for p, _, _ in os.walk(d)), key=len, reverse=True):
        try:
            os.rmdir(sub)
        except FileNotFoundError:
            pass


STALE = ((PREFIX + "*", PREFIX + r"(\d+)-"), ("slurm_rt*", r"slurm_rt(\d+)$"),
         ("system.slice/docker-5eed*.scope", r"docker-5eed([0-9a-f]{8})0{52}\.scope$"))


def docker_id():
    return "5eed%08x" % os.getpid() + "0" * 52


def purge_stale():
    """Cgroups of earlier runs whose test process is gone."""
    for point in set(p for p in MOUNTS["mounts"].values() if p):
        for pattern, owner in STALE:
            for d in glob.glob(os.path.join(point, pattern)):
                m = re.match(owner, os.path.basename(d))
                pid = m and int(m.group(1), 16 if "docker" in pattern else 10)
                if pid and not alive(pid):
                    kill_all_in(d)
                    rmdir_tree(d)


def kill_all_in(d):
    for procs in glob.glob(d + "/**/cgroup.procs", recursive=True):
        for pid in read(procs).split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass


@unittest.skipUnless(os.geteuid() == 0, "needs root (makes cgroups)")
@unittest.skipIf(MOUNTS["mode"] == "none", "no cgroup hierarchy mounted")
class RealCgroups(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        purge_stale()

    def setUp(self):
        self.procs = []

    def cgroup(self, name, path=None):
        """A path for this test; whatever exists there at the end is removed."""
        path = path or "/%s%d-%s" % (PREFIX, os.getpid(), name)

        def cleanup():
            for p in self.procs:
                if p.poll() is None:
                    p.kill()
                p.wait()
            for point in set(p for p in MOUNTS["mounts"].values() if p):
                d = point + path
                if os.path.isdir(d):
                    wait_for(lambda: not any(read(f).strip() for f in
                                             glob.glob(d + "/**/cgroup.procs", recursive=True)),
                             what="the test's processes to leave " + d)
                    rmdir_tree(d)
        self.addCleanup(cleanup)
        return path

    def spawn_in(self, path, script):
        """sh -c SCRIPT, moved into the cgroup before it runs the script."""
        p = subprocess.Popen(["sh", "-c", '"$0" attach "$1" $$ && exec sh -c "$2"', TOOL, path, script],
                             start_new_session=True)
        self.procs.append(p)
        return p

    def members(self, path):
        return sorted(int(x) for x in tool("pids", path).stdout.split())

    def test_v2_cpu_pressure_and_end(self):
        if not MOUNTS["mounts"].get("v2"):
            self.skipTest("no v2 tree")
        path = self.cgroup("cpu")
        tool("make", path)
        made = [h for h, point in MOUNTS["mounts"].items()
                if point and os.path.isdir(point + path)]
        want = {"v2", "memory", "cpuacct", "blkio", "pids"} & set(h for h, p in MOUNTS["mounts"].items() if p)
        # (where cpu and cpuacct share a hierarchy, the cpuacct cgroup is the cpu one too)
        self.assertTrue(want <= set(made), made)
        if MOUNTS["mounts"].get("cpu") != MOUNTS["mounts"].get("cpuacct"):
            self.assertNotIn("cpu", made)
        for h in made:
            st = os.stat(hier_dir(h, path))
            self.assertEqual((st.st_uid, st.st_mode & 0o777), (0, 0o755), h)
        self.assertEqual(tool("owner", path).stdout.strip(), "0")
        self.assertEqual(tool("make", path, check=False).returncode, 1)  # exists

        # Four burners on the host's cores, started in the cgroup.
        t0 = time.monotonic()
        root = self.spawn_in(path, "for i in 1 2 3 4; do sha256sum /dev/zero & done; wait")
        wait_for(lambda: len(self.members(path)) == 5, what="the burners")
        self.assertIn(root.pid, self.members(path))
        where = tool_json("where", self.members(path)[-1])
        for h in made:
            self.assertEqual(where["paths"][h], path, h)
        watch = subprocess.Popen([TOOL, "watch", path, "60"], stdout=subprocess.PIPE, text=True)
        self.procs.append(watch)
        time.sleep(3)
        # However loaded the host, they have burnt 1.5 s of CPU before they go.
        stat = hier_dir("v2", path) + "/cpu.stat"
        wait_for(lambda: int(dict(ln.split() for ln in read(stat).splitlines())["usage_usec"]) > 1.5e6, timeout=60,
                 what="the burners' first 1.5 s of CPU")
        running = tool_json("read", path)
        self.assertTrue(running["populated"])
        self.assertEqual(tool("populated", path).stdout.strip(), "1")

        os.killpg(root.pid, signal.SIGKILL)
        root.wait()
        wait_for(lambda: not self.members(path), what="the burners to die")
        elapsed = time.monotonic() - t0
        out, _ = watch.communicate(timeout=30)
        ended = json.loads(out)
        # The end came through inotify on cgroup.events, not the poll.
        self.assertEqual((ended["empty"], ended["gone"], ended["via"]), (True, False, "inotify"))
        self.assertGreaterEqual(ended["wakeups"], 1)

        f = tool_json("read", path)
        self.assertFalse(f["populated"])
        self.assertEqual(f["in"], made)
        v2 = dict(line.split() for line in read(hier_dir("v2", path) + "/cpu.stat").splitlines())
        self.assertEqual(f["cpu_usage_usec"], int(v2["usage_usec"]))
        self.assertEqual(f["cpu_user_usec"], int(v2["user_usec"]))
        self.assertEqual(f["cpu_system_usec"], int(v2["system_usec"]))
        # What they burnt, read after their end.
        self.assertGreater(f["cpu_usage_usec"], 1.5e6)
        self.assertLess(f["cpu_usage_usec"], elapsed * os.cpu_count() * 1e6)
        # v1 cpuacct counts the same time (one path in both hierarchies).
        if "cpuacct" in made:
            ns = int(read(hier_dir("cpuacct", path) + "/cpuacct.usage"))
            self.assertEqual(ns // 1000, f["cpu_usage_usec"])
        # Four runnable burners on fewer cores: some of them waited nearly all along.
        if os.cpu_count() < 4:
            self.assertGreater(f["psi_cpu_some_usec"], 0.5 * 3e6)
        psi = read(hier_dir("v2", path) + "/cpu.pressure")
        self.assertEqual(f["psi_cpu_some_usec"], int(re.search(r"^some .* total=(\d+)", psi, re.M).group(1)))
        for k in ("psi_mem_some_usec", "psi_io_some_usec", "psi_io_full_usec"):
            self.assertIsNotNone(f[k], k)
        if "pids" in made:
            # (pids.current counts the burners until they are reaped)
            wait_for(lambda: tool_json("read", path)["pids_current"] == 0, what="pids.current 0")
            self.assertGreaterEqual(f["pids_peak"], 5)
        tool("remove", path)
        for h in made:
            self.assertFalse(os.path.exists(hier_dir(h, path)), h)
        self.assertEqual(tool("read", path, check=False).returncode, 1)  # ENOENT

    def test_memory_limit_oom_kill(self):
        path = self.cgroup("oom")
        tool("make", path)
        limit = 64 << 20
        if MOUNTS["mounts"].get("memory"):
            d = hier_dir("memory", path)
            write(d + "/memory.limit_in_bytes", str(limit))
            # No way around it through swap (where there is swap: memory.failcnt
            # then counts only the hits of the memory limit, not of memsw's).
            if os.path.exists(d + "/memory.memsw.limit_in_bytes") and swap_total():
                write(d + "/memory.memsw.limit_in_bytes", str(limit))
        else:
            d = hier_dir("v2", path)
            if not os.path.exists(d + "/memory.max"):
                self.skipTest("no memory controller for this cgroup")
            write(d + "/memory.max", str(limit))
            if os.path.exists(d + "/memory.swap.max"):
                write(d + "/memory.swap.max", "0")
        sleeper = self.spawn_in(path, "exec sleep 60")
        wait_for(lambda: self.members(path) == [sleeper.pid], what="the sleeper")
        where = tool_json("where", sleeper.pid)
        self.assertEqual(where["mem_max"], {"value": limit, "at": path})
        hog = self.spawn_in(path, "exec /usr/bin/python3 -c 'x = b\"\\1\" * (256 << 20); print(len(x))'")
        self.assertEqual(hog.wait(timeout=60), -signal.SIGKILL)
        f = tool_json("read", path)
        self.assertEqual(f["ev_oom_kill"], 1)
        self.assertEqual(f["mem_max"], limit)
        self.assertGreater(f["mem_peak"], limit * 0.9)
        self.assertLessEqual(f["mem_peak"], limit)
        if not swap_total():
            self.assertGreater(f["ev_max"], 0)
        self.assertTrue(f["populated"] in (True, None))  # the sleeper lives on
        self.assertEqual(tool("populated", path).stdout.strip(), "1")
        # A cgroup with a process in it is not removed.
        p = tool("remove", path, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("busy", p.stderr)

    def test_v1_only_cgroup(self):
        """A cgroup in v1 memory and cpuacct only, with step and task
        children, as Slurm's cgroup/v1 plugin makes them."""
        if not (MOUNTS["mounts"].get("memory") and MOUNTS["mounts"].get("cpuacct")):
            self.skipTest("no v1 memory and cpuacct hierarchies")
        path = self.cgroup("v1")
        for h in ("memory", "cpuacct"):
            os.makedirs(hier_dir(h, path) + "/step_0/task_0")
        task = path + "/step_0/task_0"
        p = subprocess.Popen(["sh", "-c", 'for h in "$@"; do echo $$ > "$h"/cgroup.procs; done; '
                              'exec timeout 1 sha256sum /dev/zero', "sh"] +
                             [hier_dir(h, task) for h in ("memory", "cpuacct")])
        self.procs.append(p)
        wait_for(lambda: str(p.pid) in tool("pids", path).stdout.split(), what="the task")
        self.assertEqual(tool("populated", path).stdout.strip(), "1")
        watch = tool_json("watch", path, 30)
        self.assertEqual((watch["empty"], watch["via"]), (True, "poll"))
        p.wait()
        f = tool_json("read", path)
        self.assertEqual(f["in"], ["memory", "cpuacct"])
        self.assertIsNone(f["populated"])
        self.assertIsNone(f["psi_cpu_some_usec"])
        ns = int(read(hier_dir("cpuacct", path) + "/cpuacct.usage"))
        self.assertEqual(f["cpu_usage_usec"], ns // 1000)
        self.assertGreater(f["cpu_usage_usec"], 0.3e6)
        user = int(read(hier_dir("cpuacct", path) + "/cpuacct.stat").split()[1])
        self.assertEqual(f["cpu_user_usec"], user * 1000000 // os.sysconf("SC_CLK_TCK"))
        self.assertGreater(f["mem_peak"], 0)
        self.assertEqual(tool("populated", path).stdout.strip(), "0")
        tool("remove", path)
        for h in ("memory", "cpuacct"):
            self.assertFalse(os.path.exists(hier_dir(h, path)))

    def test_v1_blkio(self):
        if not MOUNTS["mounts"].get("blkio"):
            self.skipTest("no v1 blkio hierarchy")
        path = self.cgroup("io")
        tool("make", path)
        tmp = tempfile.mkdtemp(prefix="rt-cgio-", dir="/var/tmp")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", tmp]))
        # Since Linux 6.10 v1 blkio counts I/O only on a disk with a throttle
        # rule: one that can never throttle, in this cgroup only.
        dev = os.stat(tmp).st_dev
        disk = os.path.realpath("/sys/dev/block/%d:%d" % (os.major(dev), os.minor(dev)))
        if os.path.exists(disk + "/partition"):
            disk = os.path.dirname(disk)
        try:
            majmin = read(disk + "/dev").strip()
            write(hier_dir("blkio", path) + "/blkio.throttle.read_bps_device", majmin + " 1099511627776")
        except OSError as e:
            self.skipTest("no throttle rule for %s: %s" % (tmp, e))
        p = self.spawn_in(path, "dd if=/dev/zero of=%s/f bs=1M count=8 oflag=direct status=none && "
                          "dd if=%s/f of=/dev/null bs=1M iflag=direct status=none" % (tmp, tmp))
        if p.wait(timeout=60) != 0:
            self.skipTest("no O_DIRECT on %s" % tmp)
        f = tool_json("read", path)
        self.assertGreaterEqual(f["io_wbytes"], 8 << 20)
        self.assertGreaterEqual(f["io_rbytes"], 8 << 20)
        self.assertGreaterEqual(f["io_wios"], 1)
        self.assertGreaterEqual(f["io_rios"], 1)

    def test_removed_under_open_handle_and_kill(self):
        if not MOUNTS["mounts"].get("v2"):
            self.skipTest("no v2 tree")
        path = self.cgroup("gone")
        tool("make", path)
        p = self.spawn_in(path, "sleep 60 & exec sleep 60")
        wait_for(lambda: len(self.members(path)) == 2, what="the sleepers")
        tool("kill", path)  # v2 cgroup.kill: every process in it at once
        self.assertEqual(p.wait(timeout=30), -signal.SIGKILL)
        wait_for(lambda: not self.members(path), what="the sleepers to die")
        # read-removed: opened, removed (rt_cg_remove), read through the open handle.
        f = tool_json("read-removed", path)
        self.assertTrue(f["gone"])
        self.assertEqual(f["populated_rc"], -19)  # -ENODEV
        self.assertFalse(any(os.path.exists(hier_dir(h, path)) for h, pt in MOUNTS["mounts"].items() if pt))

    def test_container_and_slurm_layouts(self):
        """A docker container's cgroup (systemd driver) and a Slurm v1 job's,
        made by hand as the runtimes make them: found by id and name, and
        recognised from a process's cgroups with the job's memory limit."""
        cid = docker_id()
        scope = "/system.slice/docker-%s.scope" % cid
        points = set(p for h, p in MOUNTS["mounts"].items() if p and h != "cpu")
        for point in points:
            if not os.path.isdir(point + "/system.slice"):
                self.addCleanup(lambda d=point + "/system.slice": os.path.isdir(d) and os.rmdir(d))
        self.cgroup("docker", scope)
        for point in points:
            os.makedirs(point + scope)
        state = tempfile.mkdtemp(prefix="rt-cgstate-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", state]))
        os.makedirs("%s/var/lib/docker/containers/%s" % (state, cid))
        name = "rt-web-%d" % os.getpid()
        write("%s/var/lib/docker/containers/%s/config.v2.json" % (state, cid),
              json.dumps({"ID": cid, "Name": "/" + name, "Config": {"Image": "busybox:1.36"}}))
        sleeper = self.spawn_in(scope, "exec sleep 60")
        wait_for(lambda: self.members(scope) == [sleeper.pid], what="the container's process")
        want = {"id": cid, "runtime": "docker", "cgroup": scope, "name": name, "image": "busybox:1.36"}
        self.assertEqual(tool_json("container", cid[:12], state), want)
        self.assertEqual(tool_json("container", name, state), want)
        self.assertEqual(tool("container", "5eed", state, check=False).returncode, 1)  # too short for an id
        where = tool_json("where", sleeper.pid)
        top = "v2" if MOUNTS["mounts"].get("v2") else "memory"
        self.assertEqual(where["classes"][top], {"kind": "container", "cgroup": scope, "name": "docker",
                                                 "id": cid, "job": 0, "uid": -1})
        self.assertIsNotNone(tool_json("read", scope)["cpu_usage_usec"])

        if not (MOUNTS["mounts"].get("memory") and MOUNTS["mounts"].get("cpuacct")):
            return
        top = "/slurm_rt%d" % os.getpid()
        job = top + "/uid_0/job_42"
        self.cgroup("slurm", top)
        for h in ("memory", "cpuacct"):
            os.makedirs(hier_dir(h, job) + "/step_0/task_0")
        write(hier_dir("memory", job) + "/memory.limit_in_bytes", str(512 << 20))
        task = subprocess.Popen(["sh", "-c", 'for h in "$@"; do echo $$ > "$h"/cgroup.procs; done; exec sleep 60',
                                 "sh"] + [hier_dir(h, job + "/step_0/task_0") for h in ("memory", "cpuacct")])
        self.procs.append(task)
        wait_for(lambda: str(task.pid) in tool("pids", job).stdout.split(), what="the task")
        where = tool_json("where", task.pid)
        self.assertEqual(where["paths"]["memory"], job + "/step_0/task_0")
        self.assertEqual(where["classes"]["memory"], {"kind": "slurm", "cgroup": job, "name": "job_42", "id": "",
                                                      "job": 42, "uid": 0})
        self.assertEqual(where["mem_max"], {"value": 512 << 20, "at": job})


if __name__ == "__main__":
    unittest.main(verbosity=2)
