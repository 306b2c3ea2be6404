"""A real single-node Slurm for integration tests: Debian's slurmctld, slurmd
and munge on loopback, with proctrack/cgroup, task/cgroup and the cgroup/v1
plugin (the CI machine's memory, cpuset and freezer hierarchies are v1).

Slurm(...).start() brings it up in about a second under /tmp/rt-slurm (its
ports, 6817 and 6818, are fixed: one at a time, as ctest's lock runs them);
stop() shuts it down, kills what its jobs left and removes the slurm_*
cgroups it made. SlurmTest starts one per test class for two real users (u1,
u2) who may srun and sbatch. Nothing of the packages' own services is used:
munged runs on a socket and key of its own (slurm.conf's AuthInfo)."""

import os
import pwd
import re
import shutil
import signal
import subprocess
import time

from rtlib import TestUsers, UsersTest, setpriv, wait_for

BASE = "/tmp/rt-slurm"
CGROUP_ROOT = "/sys/fs/cgroup"
NODE = "localhost"
# slurmd's environment: nothing of the test's (the extern step's processes
# inherit it).
DAEMON_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}


def available():
    """Why Slurm cannot run here, or None (scripts/setup.d/80-slurm.sh installs it)."""
    for tool in ("slurmctld", "slurmd", "munged", "sbatch", "srun", "scontrol"):
        if not shutil.which(tool, path="/usr/sbin:/usr/bin"):
            return "%s is not installed (scripts/setup.d/80-slurm.sh)" % tool
    if not os.path.isdir(os.path.join(CGROUP_ROOT, "memory")):
        return "no cgroup v1 memory hierarchy"
    return None


def _running(pid):
    """pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _kill_all(pids, sig, what):
    """Send sig to every process pids() names until none is left running."""
    def gone():
        left = [p for p in pids() if _running(p)]
        for p in left:
            _signal(p, sig)
        return not left
    wait_for(gone, timeout=10, step=0.05, what=what + " to exit")


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
    except OSError:
        pass


class Slurm:
    def __init__(self, cpus=2, memory_mb=2000, gpus=2):
        self.dir = BASE
        self.conf = os.path.join(BASE, "slurm.conf")
        self.munge_socket = os.path.join(BASE, "munge", "munge.sock")
        self.cpus, self.memory_mb, self.gpus = cpus, memory_mb, gpus
        self.env = dict(DAEMON_ENV, SLURM_CONF=self.conf)

    # --- life cycle -------------------------------------------------------

    def start(self):
        self._stop_leftovers()
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(os.path.join(self.dir, "state"))
        os.makedirs(os.path.join(self.dir, "spool"))
        os.chmod(self.dir, 0o755)
        self._write_config()
        self._start_munge()
        for daemon in ("slurmctld", "slurmd"):
            subprocess.run([daemon, "-f", self.conf], env=self.env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for(self._idle, timeout=30, step=0.1, what="the Slurm node to be idle")
        return self

    def stop(self):
        self._stop_leftovers()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _idle(self):
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], env=self.env,
                             capture_output=True, text=True).stdout.split()
        return out == ["idle"]

    def _stop_leftovers(self):
        """What this or a crashed run left: the jobs' processes (slurmstepd
        included) first, then the daemons, slurmd before munged, which it
        talks to on its way out; then the slurm_* cgroups."""
        _kill_all(self._pids_in_cgroups, signal.SIGKILL, "the Slurm jobs' processes")
        for names in (("slurmd", "slurmctld"), ("munged",)):
            try:
                _kill_all(lambda: self._daemons(names), signal.SIGTERM, " and ".join(names))
            except AssertionError:
                _kill_all(lambda: self._daemons(names), signal.SIGKILL, " and ".join(names))
        for top in self._cgroup_tops():
            for root, dirs, _ in os.walk(top, topdown=False):
                for d in dirs:
                    os.rmdir(os.path.join(root, d))
            os.rmdir(top)

    def _daemons(self, names):
        """Daemons of these names started with this fixture's files."""
        pids = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    argv = f.read().decode(errors="replace").split("\0")
            except OSError:
                continue
            if os.path.basename(argv[0]) in names and \
                    any(a.startswith(self.dir + "/") for a in argv):
                pids.append(int(pid))
        return pids

    def _cgroup_tops(self):
        tops = []
        for h in os.listdir(CGROUP_ROOT):
            base = os.path.join(CGROUP_ROOT, h)
            if os.path.isdir(base) and not os.path.islink(base):
                tops += [os.path.join(base, d) for d in os.listdir(base) if d.startswith("slurm_")
                         or d == "slurm"]
        return tops

    def _pids_in_cgroups(self):
        pids = set()
        for top in self._cgroup_tops():
            for root, _, files in os.walk(top):
                if "cgroup.procs" in files:
                    try:
                        with open(os.path.join(root, "cgroup.procs")) as f:
                            pids.update(int(p) for p in f.read().split())
                    except OSError:
                        pass  # Slurm removed it meanwhile (ENODEV, ENOENT)
        return pids

    def _write_config(self):
        d = self.dir
        gres = " Gres=gpu:%d" % self.gpus if self.gpus else ""
        with open(self.conf, "w") as f:
            f.write("\n".join([
                "ClusterName=rt",
                "SlurmctldHost=" + NODE,
                "SlurmUser=root",
                "AuthInfo=socket=" + self.munge_socket,
                "StateSaveLocation=%s/state" % d,
                "SlurmdSpoolDir=%s/spool" % d,
                "SlurmctldPidFile=%s/slurmctld.pid" % d,
                "SlurmdPidFile=%s/slurmd.pid" % d,
                "SlurmctldLogFile=%s/slurmctld.log" % d,
                "SlurmdLogFile=%s/slurmd.log" % d,
                "ProctrackType=proctrack/cgroup",
                "TaskPlugin=task/cgroup",
                "PrologFlags=contain",  # a step_extern per job, as pam_slurm_adopt sites have
                "JobAcctGatherType=jobacct_gather/cgroup",  # a cpuacct cgroup per job, as SchedMD recommends
                "AccountingStorageType=accounting_storage/none",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core_Memory",
                "ReturnToService=2",
                "KillWait=1",
                "GresTypes=gpu" if self.gpus else "",
                "NodeName=%s CPUs=%d RealMemory=%d%s State=UNKNOWN" % (NODE, self.cpus, self.memory_mb, gres),
                "PartitionName=debug Nodes=%s Default=YES MaxTime=INFINITE State=UP" % NODE,
                ""]))
        with open(os.path.join(d, "cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=cgroup/v1\nCgroupMountpoint=%s\nConstrainCores=yes\n"
                    "ConstrainRAMSpace=yes\n" % CGROUP_ROOT)
        if self.gpus:
            # GPUs Slurm hands out without a driver: character devices of
            # NVIDIA's major, which nothing opens.
            for i in range(self.gpus):
                os.mknod(os.path.join(d, "nvidia%d" % i), 0o600 | 0o020000, os.makedev(195, i))
            with open(os.path.join(d, "gres.conf"), "w") as f:
                f.write("AutoDetect=off\nName=gpu File=%s/nvidia[0-%d]\n" % (d, self.gpus - 1))

    def _start_munge(self):
        m = os.path.join(self.dir, "munge")
        os.makedirs(m)
        munge = pwd.getpwnam("munge")
        with open(os.path.join(m, "munge.key"), "wb") as f:
            f.write(os.urandom(1024))
        for p in (m, os.path.join(m, "munge.key")):
            os.chown(p, munge.pw_uid, munge.pw_gid)
        os.chmod(m, 0o755)
        os.chmod(os.path.join(m, "munge.key"), 0o400)
        subprocess.run(["runuser", "-u", "munge", "--", "munged", "--socket", self.munge_socket,
                        "--key-file", os.path.join(m, "munge.key"),
                        "--pid-file", os.path.join(m, "munged.pid"),
                        "--seed-file", os.path.join(m, "munged.seed"),
                        "--log-file", os.path.join(m, "munged.log")],
                       env=DAEMON_ENV, check=True, capture_output=True)

    # --- jobs -----------------------------------------------------------

    def user_env(self, user):
        pw = pwd.getpwnam(user)
        return dict(DAEMON_ENV, SLURM_CONF=self.conf, USER=user, LOGNAME=user, HOME="/tmp",
                    TRACKER_TEST_USER=str(pw.pw_uid))

    def sbatch(self, user, *args, script="sleep 30"):
        """Submit a batch job as user; its id."""
        cmd = setpriv(user) + ["sbatch", "--parsable", "--chdir=/tmp", "--output=/dev/null"] + \
            list(args) + ["--wrap", script]
        p = subprocess.run(cmd, env=self.user_env(user), capture_output=True, text=True, cwd="/tmp")
        if p.returncode != 0:
            raise AssertionError("sbatch %s: %s" % (args, p.stderr))
        return int(p.stdout.strip().split(";")[0])

    def srun(self, user, *args, **kw):
        """srun as user, in the background: the Popen."""
        cmd = setpriv(user) + ["srun", "--chdir=/tmp"] + list(args)
        return subprocess.Popen(cmd, env=self.user_env(user), cwd="/tmp", **kw)

    def jobs_of(self, user):
        """The ids of user's jobs Slurm knows (pending or running)."""
        out = subprocess.run(["squeue", "-h", "-u", user, "-o", "%i"], env=self.env,
                             capture_output=True, text=True).stdout
        return [int(x) for x in out.split()]

    def job(self, job_id):
        """scontrol's view of a job: a dict of its KEY=VALUE fields."""
        out = subprocess.run(["scontrol", "show", "job", "-o", str(job_id)], env=self.env,
                             capture_output=True, text=True).stdout
        return dict(kv.split("=", 1) for kv in re.findall(r"(\S+=\S*)", out))

    def wait_running(self, job_id, timeout=30):
        wait_for(lambda: self.job(job_id).get("JobState") == "RUNNING", timeout=timeout,
                 step=0.1, what="Slurm job %s to run" % job_id)

    def wait_ended(self, job_id, timeout=60):
        wait_for(lambda: self.job(job_id).get("JobState") not in ("PENDING", "RUNNING", "CONFIGURING",
                                                                  "COMPLETING", None),
                 timeout=timeout, step=0.1, what="Slurm job %s to end" % job_id)

    def job_cgroup(self, uid, job_id, hierarchy="memory"):
        """The v1 cgroup directory of a job (the plugin's layout)."""
        return os.path.join(CGROUP_ROOT, hierarchy, "slurm_" + NODE, "uid_%d" % uid, "job_%d" % job_id)

    def task_pids(self, uid, job_id, step):
        """Processes in a step's tasks (not slurmstepd itself)."""
        base = os.path.join(self.job_cgroup(uid, job_id), "step_" + step)
        pids = []
        for root, _, files in os.walk(base):
            if root != base and "cgroup.procs" in files:
                with open(os.path.join(root, "cgroup.procs")) as f:
                    pids += [int(p) for p in f.read().split()]
        return pids

    def log(self, daemon="slurmd"):
        with open(os.path.join(self.dir, daemon + ".log")) as f:
            return f.read()


class SlurmTest(UsersTest):
    """One Slurm for the test class, and two real users, u1 and u2, who may
    submit to it. Skipped where Slurm is not installed."""

    roles = ("u1", "u2")
    slurm_args = {}

    @classmethod
    def setUpClass(cls):
        why = available()
        if why:
            raise __import__("unittest").SkipTest(why)
        super().setUpClass()
        cls.slurm = Slurm(**cls.slurm_args)
        cls.addClassCleanup(cls.slurm.stop)
        cls.slurm.start()

    @classmethod
    def uid(cls, user):
        return pwd.getpwnam(user).pw_uid


__all__ = ["Slurm", "SlurmTest", "available", "TestUsers"]
