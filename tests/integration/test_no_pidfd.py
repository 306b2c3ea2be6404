"""Jobs without pidfd_open(2): kernels before 5.3, container seccomp profiles
that predate it and valgrind answer ENOSYS. The daemon runs here under a
seccomp filter that refuses pidfd_open with ENOSYS; jobs must still start,
be sampled, end when their root exits (noticed by the next tick) with its
exit status, and a wrong start time must still be refused."""

import ctypes
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import rtlib  # noqa: E402
from rtlib import IFACE, Daemon, VarlinkError, run_ctl, wait_for  # noqa: E402

SYS_PIDFD_OPEN = 434  # the same number on every architecture (new syscalls are unified)
ENOSYS = 38


def refuse_pidfd_open():
    """preexec_fn: install a seccomp filter that fails pidfd_open with ENOSYS."""
    libc = ctypes.CDLL(None, use_errno=True)

    class SockFilter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                    ("k", ctypes.c_uint)]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    BPF_LD_W_ABS, BPF_JEQ_K, BPF_RET_K = 0x20, 0x15, 0x06
    ALLOW, ERRNO = 0x7FFF0000, 0x00050000
    prog = (SockFilter * 4)(
        SockFilter(BPF_LD_W_ABS, 0, 0, 0),                 # seccomp_data.nr
        SockFilter(BPF_JEQ_K, 0, 1, SYS_PIDFD_OPEN),
        SockFilter(BPF_RET_K, 0, 0, ERRNO | ENOSYS),
        SockFilter(BPF_RET_K, 0, 0, ALLOW),
    )
    fprog = SockFprog(len(prog), prog)
    PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP")


class NoPidfdDaemon(Daemon):
    def start(self):
        self.log = open(self.log_path, "ab")
        cmd = [rtlib.DAEMON, "--socket", self.socket, "--state-dir", self.state_dir,
               "--interval", str(self.interval), "--log-target", "stderr",
               "--log-level", "debug"] + self.args
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log, env=self.env,
                                     preexec_fn=refuse_pidfd_open)
        wait_for(self._ready, timeout=20, what="the daemon's socket")
        return self


def starttime(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


class NoPidfd(unittest.TestCase):
    def setUp(self):
        self.d = NoPidfdDaemon(interval=0.2).start()

    def tearDown(self):
        try:
            self.d.stop()
        finally:
            self.d.cleanup()

    def test_root_exit_ends_job(self):
        p = subprocess.Popen(["sh", "-c", "sleep 1; exit 7"])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        job = self.d.call("StartJob", {"pid": p.pid, "start_time": starttime(p.pid)})["job"]
        wait_for(lambda: self.d.call("GetJob", {"id": job["id"]})["job"]["state"] != "running",
                 timeout=20, what="the job to end")
        j = self.d.call("GetJob", {"id": job["id"]})["job"]
        self.assertEqual((j["state"], j["exit_code"]), ("failed", 7))
        self.assertGreaterEqual(j["summary"]["samples"], 3)
        log = self.d.read_log()
        self.assertEqual(log.count("pidfd_open"), 1, "warned once: " + log[-2000:])

    def test_wrong_start_time_refused(self):
        p = subprocess.Popen(["sleep", "30"])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        with self.assertRaises(VarlinkError) as e:
            self.d.call("StartJob", {"pid": p.pid, "start_time": starttime(p.pid) + 1})
        self.assertEqual(e.exception.error, IFACE + ".NoSuchProcess")

    def test_ctl_run_exit_code(self):
        rc, out, err = run_ctl(self.d, "run", "--quiet", "--", "sh", "-c", "exit 5")
        self.assertEqual(rc, 5, err)
        jobs = self.d.call("ListJobs")["jobs"]
        self.assertEqual([(j["state"], j["exit_code"]) for j in jobs], [("failed", 5)])


if __name__ == "__main__":
    unittest.main()
