"""Shared helpers for the benchmarks in tests/bench/ (Debian's python3,
standard library only). They print figures; they are not pass/fail tests
and are not registered in ctest.

The binaries come from a Release tree of their own (build-release, or
$BENCH_BUILD_DIR), configured and built here on first use."""

import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(os.environ.get("BENCH_BUILD_DIR", os.path.join(ROOT, "build-release")))
DAEMON = os.path.join(BUILD, "daemon", "resource-trackerd")
CTL = os.path.join(BUILD, "ctl", "resource-trackerctl")
TOOLS = os.path.join(BUILD, "tests", "tools")

os.environ.update(RT_DAEMON=DAEMON, RT_CTL=CTL, RT_TOOLS_DIR=TOOLS)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import rtlib  # noqa: E402  (the integration tests' daemon and varlink client)

CLK_TCK = os.sysconf("SC_CLK_TCK")


def build(*targets):
    """Configure the Release tree if needed and build the given targets."""
    if not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
        subprocess.run(["cmake", "-S", ROOT, "-B", BUILD, "-DCMAKE_BUILD_TYPE=Release",
                        "-DRT_SANITIZE=OFF"], check=True, stdout=subprocess.DEVNULL)
    cmd = ["cmake", "--build", BUILD, "-j%d" % (os.cpu_count() or 1)]
    for t in targets:
        cmd += ["--target", t]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class Daemon(rtlib.Daemon):
    """The Release daemon in the foreground, logging at info level; prefix
    runs it under another program (valgrind)."""

    def __init__(self, interval, args=(), prefix=()):
        super().__init__(interval=interval, args=list(args) + ["--log-level", "info"])
        self.prefix = list(prefix)

    def start(self):
        self.log = open(self.log_path, "ab")
        cmd = self.prefix + [DAEMON, "--socket", self.socket, "--state-dir", self.state_dir,
                             "--interval", str(self.interval), "--log-target", "stderr"] + self.args
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log, env=self.env)
        rtlib.wait_for(self._ready, timeout=120, what="the daemon's socket")
        return self

    @property
    def pid(self):
        return self.proc.pid

    def __enter__(self):
        return self.start()

    def __exit__(self, *a):
        try:
            self.stop()
        finally:
            self.cleanup()


class Procs:
    """rt_bench_procs MODE ARG...: started, ready, ended when the block exits."""

    def __init__(self, *args):
        self.args = [os.path.join(TOOLS, "rt_bench_procs")] + [str(a) for a in args]

    def __enter__(self):
        self.p = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = self.p.stdout.readline().decode()
        if not line.startswith("ready "):
            raise RuntimeError("rt_bench_procs %s did not start" % self.args[1:])
        self.pid = int(line.split()[1])
        return self

    def __exit__(self, *a):
        self.p.stdin.close()
        self.p.wait(timeout=120)


def sleepers(n):
    return Procs("sleepers", n)


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


class Cgroup:
    """A cgroup made in every hierarchy mounted here (as a container runtime
    or Slurm makes one), removed when the block exits."""

    def __init__(self, name):
        self.path = "/rt-bench-%d-%s" % (os.getpid(), name)
        self.dirs = [r + self.path for r in rtlib.CGROUP_ROOTS
                     if os.path.isfile(os.path.join(r, "cgroup.procs"))]

    def __enter__(self):
        for d in self.dirs:
            os.makedirs(d)
        return self

    def enter(self):
        """In a child before exec: move it into the cgroup."""
        for d in self.dirs:
            with open(d + "/cgroup.procs", "w") as f:
                f.write("0")

    def __exit__(self, *a):
        rtlib.remove_cgroup(self.path)


class JobTree:
    """A shell with nprocs-1 sleeping children (a job of nprocs processes) in
    its own process group, so that kill() ends all of them; in cgroup, if
    given."""

    def __init__(self, nprocs=4, seconds=86400, cgroup=None):
        script = " ".join(["sleep %d &" % seconds] * (nprocs - 1)) + " wait"
        self.p = subprocess.Popen(["/bin/sh", "-c", script], start_new_session=True,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  preexec_fn=cgroup.enter if cgroup else None)
        self.pid = self.p.pid
        rtlib.wait_for(lambda: len(children(self.pid)) == nprocs - 1, timeout=30,
                       what="job children")

    def kill(self):
        try:
            os.killpg(self.pid, 9)
        except ProcessLookupError:
            pass
        self.p.wait()


def kill_all(trees):
    for t in trees:
        t.kill()


def start_job(conn, pid, name=None):
    params = {"pid": pid}
    if name:
        params["name"] = name
    return conn.call("StartJob", params)["job"]["id"]


def job_samples(conn, job_id):
    return conn.call("GetJob", {"id": job_id})["job"]["summary"]["samples"]


def tasks(pid):
    """{tid: name} of a process's threads."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                out[int(tid)] = f.read().strip()
        except OSError:
            pass
    return out


def task_cpu(pid, tid):
    """(on-CPU ns from schedstat, utime ticks, stime ticks) of one thread."""
    with open("/proc/%d/task/%d/schedstat" % (pid, tid)) as f:
        ns = int(f.read().split()[0])
    with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return ns, int(fields[11]), int(fields[12])


def process_cpu(pid):
    """(on-CPU ns, utime ticks, stime ticks) summed over the process's threads."""
    tot = [0, 0, 0]
    for tid in tasks(pid):
        try:
            for i, v in enumerate(task_cpu(pid, tid)):
                tot[i] += v
        except OSError:
            pass  # a thread that just ended
    return tuple(tot)


def status_kib(pid, *keys, file="status"):
    """Values in KiB of VmRSS, VmHWM, … from /proc/PID/status (or of
    Pss_Anon, … from another file such as smaps_rollup)."""
    vals = {}
    with open("/proc/%d/%s" % (pid, file)) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in keys:
                vals[k] = int(v.split()[0])
    return [vals.get(k, 0) for k in keys]


def percentile(sorted_vals, p):
    if not sorted_vals:
        return float("nan")
    return sorted_vals[min(len(sorted_vals) - 1, int(round((len(sorted_vals) - 1) * p)))]


def env_float(name, default):
    v = os.environ.get(name)
    return float(v) if v else default


def machine():
    """One line about the machine the figures come from."""
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%d vCPU, %s, kernel %s" % (os.cpu_count() or 0, model, os.uname().release)

