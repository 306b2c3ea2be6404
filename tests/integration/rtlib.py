"""Shared helpers for integration tests: a real daemon on a temporary
socket and state directory, a raw varlink client, and the client binary.

Every daemon started here must exit cleanly (status 0) when stopped and
print no sanitizer report: that is how ASan/UBSan and leak checks reach
the integration tests."""

import atexit
import errno
import grp
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

DAEMON = os.environ.get("RT_DAEMON", "resource-trackerd")
CTL = os.environ.get("RT_CTL", "resource-trackerctl")
TOOLS = os.environ.get("RT_TOOLS_DIR", "")
IFACE = "com.sparecores.ResourceTracker"

# The 32-column CSV header (docs/output.md), as the references write it.
CSV_HEADER = ("timestamp,system_processes,system_utime,system_stime,system_cpu_usage,"
              "system_memory_free_mib,system_memory_used_mib,system_memory_buffers_mib,"
              "system_memory_cached_mib,system_memory_active_mib,system_memory_inactive_mib,"
              "system_disk_read_bytes,system_disk_write_bytes,system_disk_space_total_gb,"
              "system_disk_space_used_gb,system_disk_space_free_gb,system_net_recv_bytes,"
              "system_net_sent_bytes,system_gpu_usage,system_gpu_vram_mib,system_gpu_utilized,"
              "process_pid,process_children,process_utime,process_stime,process_cpu_usage,"
              "process_memory_mib,process_disk_read_bytes,process_disk_write_bytes,"
              "process_gpu_usage,process_gpu_vram_mib,process_gpu_utilized")

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "UndefinedBehaviorSanitizer")


def wait_for(pred, timeout=10.0, step=0.02, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, what))


class VarlinkError(Exception):
    def __init__(self, reply):
        self.error = reply.get("error")
        self.parameters = reply.get("parameters") or {}
        super().__init__("%s %s" % (self.error, self.parameters))


class Connection:
    """A raw varlink connection: NUL-terminated JSON messages."""

    def __init__(self, path, timeout=30.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise
        self.buf = b""

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def send(self, method, params=None, more=False, oneway=False, fds=()):
        msg = {"method": method}
        if params is not None:
            msg["parameters"] = params
        if more:
            msg["more"] = True
        if oneway:
            msg["oneway"] = True
        self.send_raw(json.dumps(msg).encode() + b"\0", fds)

    def send_raw(self, data, fds=()):
        """data, with the descriptors fds (SCM_RIGHTS) on its first bytes."""
        if fds:
            data = data[socket.send_fds(self.sock, [data], list(fds)):]
        self.sock.sendall(data)

    def recv(self):
        """Next message, or None when the server closed the connection."""
        while b"\0" not in self.buf:
            d = self.sock.recv(1 << 20)
            if not d:
                return None
            self.buf += d
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, fds=()):
        """Parameters of the reply; raises VarlinkError on an error reply."""
        self.send(method if "." in method else IFACE + "." + method, params, fds=fds)
        r = self.recv()
        if r is None:
            raise ConnectionError("connection closed")
        if "error" in r:
            raise VarlinkError(r)
        return r.get("parameters", {})

    def stream(self, method, params=None):
        """Yield replies of a "more" call until the last one."""
        self.send(method if "." in method else IFACE + "." + method, params, more=True)
        while True:
            r = self.recv()
            if r is None:
                raise ConnectionError("connection closed mid-stream")
            if "error" in r:
                raise VarlinkError(r)
            yield r.get("parameters", {})
            if not r.get("continues"):
                return


class Daemon:
    """resource-trackerd in the foreground on a private socket and state dir."""

    def __init__(self, interval=0.2, args=(), state_dir=None, env=None, cgroups=True):
        self.tmp = tempfile.mkdtemp(prefix="rt-test-")
        # run's cgroups under a parent of this daemon's own (daemons of tests
        # running at once number their jobs alike), removed by cleanup();
        # cgroups=False: run tracks process trees.
        self.cgroups = cgroups
        self.cgroup_parent = "/rt-test-" + os.path.basename(self.tmp)
        os.chmod(self.tmp, 0o755)
        self.socket = os.path.join(self.tmp, "rt.sock")
        self.state_dir = state_dir or os.path.join(self.tmp, "state")
        self.log_path = os.path.join(self.tmp, "daemon.log")
        self.interval = interval
        self.args = list(args)
        self.env = dict(os.environ, **(env or {}))
        self.proc = None
        self.logs = []

    def _cgroup_args(self):
        """This daemon's cgroups keys, unless the test's own file sets them."""
        if "--config" in self.args:
            with open(self.args[self.args.index("--config") + 1]) as f:
                if "cgroups:" in f.read():
                    return []
        return ["--set", "cgroups.run=%s" % ("true" if self.cgroups else "false"),
                "--set", "cgroups.parent=" + self.cgroup_parent]

    def start(self):
        self.log = open(self.log_path, "ab")
        # interval=None: no --interval, the configuration file's (or the default) applies.
        cmd = [DAEMON, "--socket", self.socket, "--state-dir", self.state_dir,
               "--log-target", "stderr", "--log-level", "debug"] + \
            (["--interval", str(self.interval)] if self.interval is not None else []) + \
            self._cgroup_args() + self.args
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log, env=self.env)
        wait_for(self._ready, timeout=20, what="the daemon's socket")
        return self

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError("daemon exited early (%s):\n%s" % (self.proc.returncode, self.read_log()))
        try:
            with Connection(self.socket, timeout=2) as c:
                c.call("Ping")
            return True
        except OSError:
            return False

    def connect(self, timeout=30.0):
        return Connection(self.socket, timeout)

    def call(self, method, params=None, fds=()):
        with self.connect() as c:
            return c.call(method, params, fds)

    def read_log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def check_log_clean(self):
        log = self.read_log()
        for mark in SANITIZER_MARKS:
            if mark in log:
                raise AssertionError("sanitizer report in the daemon log:\n" + log[-6000:])

    def stop(self, expect_clean=True):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("daemon did not stop on SIGTERM:\n" + self.read_log()[-4000:])
        rc = self.proc.returncode if self.proc else 0
        self.log.close()
        self.check_log_clean()
        if expect_clean and rc != 0:
            raise AssertionError("daemon exited with %s:\n%s" % (rc, self.read_log()[-4000:]))
        return rc

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()

    def cleanup(self):
        # A test that failed before stop() must not leave its daemon behind.
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            self.log.close()
        remove_cgroup(self.cgroup_parent, kill=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


CGROUP_ROOTS = ("/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/cpuacct",
                "/sys/fs/cgroup/blkio", "/sys/fs/cgroup/pids")


def remove_cgroup(path, kill=False):
    """rmdir a cgroup and the cgroups below it in every hierarchy; one busy
    while its last processes exit is tried again for a while. kill: what is
    still in it (the jobs of a daemon the test killed) is killed first."""
    for root in CGROUP_ROOTS if kill else ():
        try:
            with open(root + path + "/cgroup.kill", "w") as f:
                f.write("1")
        except OSError:
            pass
    deadline = time.monotonic() + 5
    for root in CGROUP_ROOTS:
        top = root + path
        if not os.path.isdir(top) or not os.path.exists(os.path.join(top, "cgroup.procs")):
            continue
        for d, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
            while True:
                try:
                    os.rmdir(d)
                except OSError as e:
                    if e.errno == errno.EBUSY and time.monotonic() < deadline:
                        time.sleep(0.02)
                        continue
                break


class HandCgroup:
    """A cgroup made by hand in every hierarchy mounted here, as Slurm's v1
    plugin or a container runtime makes one; removed at the test's end."""

    def __init__(self, test, name, memory_limit=None, path=None):
        """path: where (a runtime's layout), its parents made too and removed after."""
        self.path = path or "/rt-hand-%d-%s" % (os.getpid(), name)
        self.roots = [r for r in CGROUP_ROOTS if os.path.isfile(os.path.join(r, "cgroup.procs"))]
        parent = os.path.dirname(self.path)
        while parent != "/" and not any(os.path.isdir(r + parent) for r in self.roots):
            test.addCleanup(remove_cgroup, parent)
            parent = os.path.dirname(parent)
        test.addCleanup(remove_cgroup, self.path)
        for root in self.roots:
            os.makedirs(root + self.path)
        if memory_limit:
            for f in ("/sys/fs/cgroup/memory" + self.path + "/memory.limit_in_bytes",
                      "/sys/fs/cgroup" + self.path + "/memory.max"):
                if os.path.exists(f):
                    with open(f, "w") as out:
                        out.write(str(memory_limit))

    def spawn(self, *cmd, **popen):
        """A process started in the cgroup, outside any tracked tree."""
        roots, path = self.roots, self.path

        def enter():
            for root in roots:
                with open(root + path + "/cgroup.procs", "w") as f:
                    f.write("0")
        popen = dict(dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), **popen)
        return subprocess.Popen(cmd, preexec_fn=enter, **popen)


_shared_copies = {}


def world_path(path):
    """path, or a copy other users can execute when a directory on its way is
    private (a build tree in root's home): for clients run as test users."""
    p = os.path.realpath(path)
    d, ok = p, bool(os.stat(p).st_mode & 0o001)
    while ok and d != "/":
        d = os.path.dirname(d)
        ok = bool(os.stat(d).st_mode & 0o001)
    if ok:
        return p
    if p not in _shared_copies:
        tmp = tempfile.mkdtemp(prefix="rt-bin-")
        os.chmod(tmp, 0o755)
        dst = os.path.join(tmp, os.path.basename(p))
        shutil.copy2(p, dst)
        os.chmod(dst, 0o755)
        atexit.register(shutil.rmtree, tmp, True)
        _shared_copies[p] = dst
    return _shared_copies[p]


def run_ctl(daemon, *args, env=None, user=None, timeout=60, input=None, check=None):
    """Run resource-trackerctl against daemon (as another user with setpriv)."""
    e = dict(os.environ)
    if daemon is not None:
        e["RESOURCE_TRACKER_SOCKET"] = daemon.socket
    e.update(env or {})
    cmd = [CTL] + list(args)
    if user is not None:
        cmd = setpriv(user) + [world_path(CTL)] + list(args)
    p = subprocess.run(cmd, env=e, capture_output=True, timeout=timeout, input=input)
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    for mark in SANITIZER_MARKS:
        if mark in err:
            raise AssertionError("sanitizer report from resource-trackerctl:\n" + err[-6000:])
    if check is not None and p.returncode != check:
        raise AssertionError("ctl %s exited %s, expected %s\nstdout: %s\nstderr: %s"
                             % (args, p.returncode, check, out[-3000:], err[-3000:]))
    return p.returncode, out, err


class DaemonTest(unittest.TestCase):
    """A test case with a fresh daemon per test (self.d)."""

    interval = 0.2
    daemon_args = ()
    daemon_env = None
    cgroups = True

    def setUp(self):
        self.d = Daemon(interval=self.interval, args=self.daemon_args, env=self.daemon_env,
                        cgroups=self.cgroups).start()

    def tearDown(self):
        try:
            self.d.stop()
        finally:
            self.d.cleanup()


class UsersTest(unittest.TestCase):
    """Real users (named after roles, as attributes) for a whole test class,
    removed after it (also when its setup fails); add_users() may be
    overridden to make others (groups)."""

    roles = ("u",)

    @classmethod
    def add_users(cls):
        for role in cls.roles:
            setattr(cls, role, cls.users.user(role))

    @classmethod
    def setUpClass(cls):
        cls.users = TestUsers()
        cls.addClassCleanup(cls.users.cleanup)
        cls.add_users()


class UsersDaemonTest(UsersTest):
    """UsersTest with one daemon for the class; daemon() may be overridden to
    start it differently."""

    interval = 0.2
    cgroups = True

    @classmethod
    def daemon(cls):
        return Daemon(interval=cls.interval, cgroups=cls.cgroups)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.d = cls.daemon()
        cls.addClassCleanup(cls.d.cleanup)
        cls.d.start()
        cls.addClassCleanup(cls.d.stop)  # class cleanups run last first: stop, then clean up


def starttime(pid):
    """Field 22 of /proc/PID/stat: clock ticks since boot."""
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def job_samples(daemon, job_id, page=1000, fmt="json"):
    """Every sample of a job, fetched page by page (small pages exercise offsets);
    for fmt="csv", the CSV text (one header)."""
    out, offset = [], 0
    while True:
        r = daemon.call("GetJobSamples", {"id": job_id, "offset": offset, "limit": page, "format": fmt})
        out += r["samples"] if fmt == "json" else [r["csv"]]
        if r["next_offset"] == offset:
            return out if fmt == "json" else "".join(out)
        offset = r["next_offset"]


def _first_child(ppid):
    try:
        with open("/proc/%d/task/%d/children" % (ppid, ppid)) as f:
            kids = f.read().split()
        return int(kids[0]) if kids else None
    except OSError:
        return None


def _kill_quietly(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def spawn_at(test, pid, *cmd):
    """cmd as a process with exactly this PID (rt_workload --spawn-at: clone3
    with set_tid), killed when test ends; skips test when the PID stays taken."""
    tool = os.path.join(TOOLS, "rt_workload")
    for _ in range(50):
        p = subprocess.Popen([tool, "--spawn-at", str(pid), "--"] + list(cmd))
        wait_for(lambda: _first_child(p.pid) or p.poll() is not None, timeout=10, what="spawn-at")
        if _first_child(p.pid) == pid:
            test.addCleanup(lambda: (_kill_quietly(pid), p.wait()))
            return p
        p.wait()
        if p.returncode != 75:  # 75: the PID was taken; anything else is a real failure
            raise AssertionError("spawn-at %d failed: %s" % (pid, p.returncode))
        time.sleep(0.05)
    test.skipTest("PID %d stayed taken" % pid)


TMUX = shutil.which("tmux")
SANITIZER_ENV = ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")


class Terminal:
    """A terminal as a person has one: a tmux session of width x height
    running a shell line (its own tmux server, killed by a test cleanup).
    screen() is what the terminal shows; keys() types. Skips the test
    without tmux (scripts/setup.d/60-prometheus-tmux.sh)."""

    def __init__(self, test, tmp, width=80, height=24):
        if not TMUX:
            test.skipTest("no tmux (scripts/setup.d/60-prometheus-tmux.sh)")
        self.test, self.socket = test, os.path.join(tmp, "tmux")
        self.width, self.height = width, height
        test.addCleanup(lambda: subprocess.run(self.tmux("kill-server"), capture_output=True))

    def tmux(self, *args):
        return [TMUX, "-S", self.socket] + list(args)

    @staticmethod
    def env_line(daemon, env=None):
        """"env K=V ...": the sanitizer options, the daemon's socket and env, for a shell line."""
        e = {k: os.environ[k] for k in SANITIZER_ENV if k in os.environ}
        if daemon is not None:
            e["RESOURCE_TRACKER_SOCKET"] = daemon.socket
        e.update(env or {})
        return "env " + " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in e.items())

    def start(self, line):
        subprocess.run(self.tmux("new-session", "-d", "-x", str(self.width), "-y", str(self.height), line),
                       check=True)

    def screen(self):
        return subprocess.run(self.tmux("capture-pane", "-p"), capture_output=True, check=True).stdout.decode()

    def history(self):
        """The scrollback and the screen, as text (trailing blank lines dropped)."""
        out = subprocess.run(self.tmux("capture-pane", "-p", "-S", "-"), capture_output=True, check=True)
        return out.stdout.decode().rstrip("\n")

    def wait(self, pred, what, timeout=20):
        return wait_for(lambda: pred(self.screen()) and self.screen(), timeout=timeout, what=what)

    def keys(self, *keys):
        subprocess.run(self.tmux("send-keys") + list(keys), check=True)

    def resize(self, width, height):
        subprocess.run(self.tmux("resize-window", "-x", str(width), "-y", str(height)), check=True)


def read_json_lines(text):
    return [json.loads(ln) for ln in text.splitlines() if ln.strip()]


SUMMARY_RE = re.compile(r"^Job \d+( \(.*\))? \w+ after ", re.M)


def split_summary(err):
    """stderr of `run`: (what came before the summary, the summary or None)."""
    m = SUMMARY_RE.search(err)
    return (err[:m.start()], err[m.start():]) if m else (err, None)


class TestUsers:
    """Real unprivileged users and groups for one test run.

    Names carry this process's PID, and the comment field its start time, so a
    run never collides with a concurrent one and the leftovers of a crashed run
    (whose process is gone) are recognised and removed by the next run."""

    PREFIX = "rtt"
    MARK = "resource-tracker test"

    def __init__(self):
        self.purge_stale()
        self.tag = "%s%d" % (self.PREFIX, os.getpid())
        self.comment = "%s pid=%d start=%d" % (self.MARK, os.getpid(), starttime(os.getpid()))
        self.users, self.groups = [], []

    @classmethod
    def _owner_alive(cls, comment):
        try:
            fields = dict(kv.split("=", 1) for kv in comment.split()[2:])
            return starttime(int(fields["pid"])) == int(fields["start"])
        except (OSError, KeyError, ValueError, IndexError):
            return False

    @classmethod
    def purge_stale(cls):
        for pw in pwd.getpwall():
            if pw.pw_name.startswith(cls.PREFIX) and pw.pw_gecos.startswith(cls.MARK) \
                    and not cls._owner_alive(pw.pw_gecos):
                cls._remove_user(pw.pw_name, pw.pw_uid)
        for gr in grp.getgrall():
            # Test groups are named after their run's users' prefix plus a role.
            if gr.gr_name.startswith(cls.PREFIX) and gr.gr_name.endswith("-grp"):
                pid = gr.gr_name[len(cls.PREFIX):].split("-", 1)[0]
                if pid.isdigit() and not os.path.exists("/proc/" + pid):
                    subprocess.run(["groupdel", gr.gr_name], capture_output=True)

    @staticmethod
    def kill_processes_of(uid):
        """SIGKILL every process whose real uid is uid (the test's own users only)."""
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/status" % pid) as f:
                    ruid = next(int(ln.split()[1]) for ln in f if ln.startswith("Uid:"))
                if ruid == uid:
                    os.kill(int(pid), signal.SIGKILL)
            except (OSError, StopIteration, ValueError):
                pass

    @classmethod
    def _remove_user(cls, name, uid):
        cls.kill_processes_of(uid)
        subprocess.run(["userdel", name], capture_output=True)

    def group(self, role):
        name = "%s-%s-grp" % (self.tag, role)
        subprocess.run(["groupdel", name], capture_output=True)
        subprocess.run(["groupadd", "--system", name], check=True, capture_output=True)
        self.groups.append(name)
        return grp.getgrnam(name).gr_gid

    def user(self, role, groups=(), primary=None):
        """Create user <tag>-<role>; returns its name. groups: supplementary
        group names; primary: a primary group name instead of a user group."""
        name = "%s-%s" % (self.tag, role)
        try:
            self._remove_user(name, pwd.getpwnam(name).pw_uid)
        except KeyError:
            pass
        cmd = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
               "--comment", self.comment]
        cmd += ["--gid", primary, "--no-user-group"] if primary else ["--user-group"]
        if groups:
            cmd += ["--groups", ",".join(groups)]
        subprocess.run(cmd + [name], check=True, capture_output=True)
        self.users.append(name)
        return name

    def cleanup(self):
        for name in self.users:
            try:
                self._remove_user(name, pwd.getpwnam(name).pw_uid)
            except KeyError:
                pass
        for name in self.groups:
            subprocess.run(["groupdel", name], capture_output=True)
        self.users, self.groups = [], []


def setpriv(user, keep_groups=True):
    """Command prefix running as user (its primary group and supplementary
    groups, or its primary group only)."""
    return ["setpriv", "--reuid", user, "--regid", str(pwd.getpwnam(user).pw_gid),
            "--init-groups" if keep_groups else "--clear-groups", "--"]


def spawn_as(user, cmd, **kw):
    """A process of user (setpriv execs cmd, so the PID is cmd's), returned
    once cmd runs: between its setuid and the exec, setpriv is not dumpable,
    and the kernel lets no user read it (a StartJob then is refused). Popen
    returns before the exec of setpriv renames the forked child, so its name
    alone does not tell: the child runs as root until setpriv's setuid."""
    p = subprocess.Popen(setpriv(user) + list(cmd), **kw)
    uid = pwd.getpwnam(user).pw_uid
    wait_for(lambda: p.poll() is not None or _runs_as(p.pid, uid), timeout=10, what="setpriv to run " + cmd[0])
    return p


def _runs_as(pid, uid):
    """Whether pid has left setpriv and runs as uid."""
    try:
        with open("/proc/%d/status" % pid) as f:
            fields = dict(ln.split(":", 1) for ln in f if ":" in ln)
    except OSError:
        return False
    return fields["Name"].strip() != "setpriv" and int(fields["Uid"].split()[0]) == uid


def _as_user(user, extra_groups, fn):
    """fn() in a child process with user's credentials; its JSON result."""
    pw = pwd.getpwnam(user)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setgroups(list(extra_groups) + os.getgrouplist(user, pw.pw_gid))
            os.setresgid(pw.pw_gid, pw.pw_gid, pw.pw_gid)
            os.setresuid(pw.pw_uid, pw.pw_uid, pw.pw_uid)
            data = json.dumps(fn()).encode()
            while data:
                data = data[os.write(w, data):]
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    while True:
        d = os.read(r, 1 << 16)
        if not d:
            break
        chunks.append(d)
    os.close(r)
    os.waitpid(pid, 0)
    if not chunks:
        raise AssertionError("call as %s failed" % user)
    return json.loads(b"".join(chunks))


def stream_as(user, sock, method, params, n):
    """The first n replies' parameters of a "more" call made as user (an
    error reply ends the list as {"error": name})."""
    def fn():
        out = []
        with Connection(sock) as c:
            try:
                for p in c.stream(method, params):
                    out.append(p)
                    if len(out) == n:
                        break
            except VarlinkError as e:
                out.append({"error": e.error})
        return out
    return _as_user(user, (), fn)


def call_as(user, sock, method, params=None, calls=None, extra_groups=()):
    """Varlink calls over one connection from a process of user (with its
    groups, plus extra_groups: any gids, they need not exist). Returns a list
    of ("ok", params) or ("error", name, params)."""
    todo = calls if calls is not None else [(method, params)]

    def fn():
        out = []
        with Connection(sock) as c:
            for m, p in todo:
                try:
                    out.append(("ok", c.call(m, p)))
                except VarlinkError as e:
                    out.append(("error", e.error, e.parameters))
        return out
    return [tuple(x) for x in _as_user(user, extra_groups, fn)]
