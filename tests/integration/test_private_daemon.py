"""The private daemon of a user without a system daemon, with real users:
history stays reachable after it exited (every verb starts it again), it
stays up while uploads are pending, no other user can keep a user's `run`
from running its command by taking the /tmp directory first, and none can
pose as the user's daemon (a socket of theirs, or their directory renamed
in and out of the user's path)."""

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.environ.get("RT_SOURCE_DIR", "."), "tests", "upload"))
from rtlib import (CTL, DAEMON, Daemon, UsersTest, read_json_lines, setpriv, wait_for,  # noqa: E402
                   world_path)
from standin import SentinelStandin  # noqa: E402
from test_run import system_daemon_answers  # noqa: E402

SOCKET_NAME = "com.sparecores.ResourceTracker"

# Runs as another user: a directory of its own holding a listening socket,
# renamed into the victim's socket directory path and out again as fast as
# it can until STOP exists; records what every connection sends
# (arguments: ITS_DIR VICTIM_DIR STOP). Prints what it got.
IMPOSTOR = r"""
import json, os, socket, sys, threading
mine, victim, stop = sys.argv[1:4]
srv = socket.socket(socket.AF_UNIX)
srv.bind(os.path.join(mine, "com.sparecores.ResourceTracker"))
os.chmod(os.path.join(mine, "com.sparecores.ResourceTracker"), 0o777)
srv.listen(64)
got = {"connections": 0, "bytes": b"", "swaps": 0}

def serve():
    while True:
        c, _ = srv.accept()
        got["connections"] += 1
        c.settimeout(2)
        try:
            got["bytes"] += c.recv(65536)
        except OSError:
            pass
        c.close()  # a client that sent its call gets no answer, and goes on

threading.Thread(target=serve, daemon=True).start()
while not os.path.exists(stop):
    for _ in range(200):
        try:
            os.rename(mine, victim)
        except OSError:
            continue  # the victim's own directory is there: sticky /tmp keeps it
        os.rename(victim, mine)
        got["swaps"] += 1
print(json.dumps({"connections": got["connections"], "bytes": got["bytes"].decode(errors="replace"),
                  "swaps": got["swaps"]}))
"""


def daemons_of(uid):
    """PIDs of resource-trackerd processes of uid."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv0 = f.read().split(b"\0")[0]
            if os.path.basename(argv0) == b"resource-trackerd" and os.stat("/proc/" + pid).st_uid == uid:
                found.append(int(pid))
        except OSError:
            pass
    return found


class SharedDirectories(unittest.TestCase):
    """A daemon given a directory others use leaves it as it is. Root once ran
    a user daemon with --socket /tmp/x.sock and /tmp became 0700."""

    def test_the_socket_directory_keeps_its_mode(self):
        # Unless others may write there (the socket is 0600 anyway).
        tmp = tempfile.mkdtemp(prefix="rt-sockdir-")
        self.addCleanup(shutil.rmtree, tmp, True)
        for mode, after in ((0o755, 0o755), (0o1777, 0o1777), (0o777, 0o700), (0o711, 0o711)):
            with self.subTest(mode=oct(mode)):
                d = os.path.join(tmp, "d%o" % mode)
                os.mkdir(d)
                os.chmod(d, mode)
                sock = os.path.join(d, "rt.sock")
                p = subprocess.Popen([DAEMON, "--user", "--socket", sock, "--state-dir", os.path.join(tmp, "st")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                try:
                    wait_for(lambda: os.path.exists(sock) or p.poll() is not None, what="the socket")
                    self.assertIsNone(p.poll(), p.stderr.read() if p.poll() is not None else "")
                    self.assertEqual(os.stat(d).st_mode & 0o7777, after)
                    self.assertEqual(os.stat(sock).st_mode & 0o777, 0o600)
                finally:
                    p.terminate()
                    p.wait(timeout=30)
                    p.stderr.close()

    def test_a_shared_state_directory_is_refused_untouched(self):
        tmp = tempfile.mkdtemp(prefix="rt-sockdir-")
        self.addCleanup(shutil.rmtree, tmp, True)
        shared = os.path.join(tmp, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o1777)
        p = subprocess.run([DAEMON, "--user", "--socket", os.path.join(tmp, "rt.sock"), "--state-dir", shared],
                           capture_output=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b"is shared by every user", p.stderr)
        self.assertEqual(os.stat(shared).st_mode & 0o7777, 0o1777)
        self.assertEqual(os.listdir(shared), [])


class PrivateDaemonOfAUser(UsersTest):
    roles = ("a", "b")

    @classmethod
    def setUpClass(cls):
        if system_daemon_answers():
            raise unittest.SkipTest("a system daemon is running on this machine")
        super().setUpClass()

    def setUp(self):
        self.uid = pwd.getpwnam(self.a).pw_uid
        self.tmp = tempfile.mkdtemp(prefix="rt-private-")
        os.chmod(self.tmp, 0o755)
        self.home = os.path.join(self.tmp, "home")
        os.mkdir(self.home, 0o700)
        os.chown(self.home, self.uid, -1)
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.tmp]))
        self.addCleanup(self.stop_daemons)
        self.tmp_dir = "/tmp/resource-tracker-%d" % self.uid
        self.addCleanup(lambda: shutil.rmtree(self.tmp_dir, ignore_errors=True))

    def stop_daemons(self):
        for pid in daemons_of(self.uid):
            os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not daemons_of(self.uid), timeout=30, what="the private daemons to exit")

    def ctl(self, *args, home=None, env=None):
        """resource-trackerctl as user A, no XDG_RUNTIME_DIR: its socket is in /tmp."""
        e = {"PATH": "/usr/bin:/bin", "HOME": home or self.home, "RESOURCE_TRACKERD": world_path(DAEMON)}
        e.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
        e.update(env or {})
        p = subprocess.run(setpriv(self.a) + [world_path(CTL)] + list(args), env=e, capture_output=True,
                           timeout=90)
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    def test_history_after_the_daemon_exited(self):
        rc, _, err = self.ctl("run", "-q", "-n", "hist", "--", "sh", "-c", "sleep 1.5; exit 2")
        self.assertEqual(rc, 2, err)
        for verb in (["--json", "jobs"], ["--json", "status", "hist"], ["samples", "hist"]):
            self.stop_daemons()  # as after its idle exit
            rc, out, err = self.ctl(*verb)
            self.assertEqual(rc, 0, "%s: %s" % (verb, err))
            if verb[1] == "jobs":
                [job] = json.loads(out)
                self.assertEqual((job["name"], job["state"], job["exit_code"]), ("hist", "failed", 2))
            elif verb[1] == "status":
                self.assertEqual(json.loads(out)["job"]["name"], "hist")
            else:
                self.assertGreaterEqual(len(read_json_lines(out)), 2)
            self.assertEqual(len(daemons_of(self.uid)), 1, "the verb started the private daemon")

    def test_a_taken_tmp_directory_does_not_block_run(self):
        # User B creates A's /tmp directory first (no XDG_RUNTIME_DIR for A).
        subprocess.run(setpriv(self.b) + ["mkdir", "-m", "0777", self.tmp_dir], check=True)
        mark = os.path.join(self.home, "ran")
        rc, _, err = self.ctl("run", "-q", "-n", "blocked", "--", "sh", "-c", "echo ran > %s; exit 5" % mark)
        self.assertEqual(rc, 5, err)
        self.assertTrue(os.path.exists(mark), "the command ran")
        sock = os.path.join(self.home, ".local", "state", "resource-tracker", "run", SOCKET_NAME)
        self.assertTrue(os.path.exists(sock), "the daemon listens under the state directory")
        rc, out, err = self.ctl("--json", "status", "blocked")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["job"]["exit_code"], 5)
        self.assertEqual(os.listdir(self.tmp_dir), [], "nothing of A's goes into B's directory")
        # Without a usable home either: the command still runs, untracked.
        os.unlink(mark)
        self.stop_daemons()
        rc, _, err = self.ctl("run", "--", "sh", "-c", "echo ran > %s; exit 6" % mark, home="/nonexistent")
        self.assertEqual(rc, 6, err)
        self.assertTrue(os.path.exists(mark), "the command ran")
        self.assertIn("running sh untracked", err)

    def test_another_users_socket_gets_nothing(self):
        # B's daemon-like socket, named with --socket: A's client sees who
        # answers (SO_PEERCRED) and sends nothing; so does root's.
        d = tempfile.mkdtemp(prefix="rt-other-")
        self.addCleanup(shutil.rmtree, d, True)
        os.chmod(d, 0o777)
        sock = os.path.join(d, "rt.sock")
        script = "import socket,sys,os\ns=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777)\n" \
                 "s.listen(8); print('up', flush=True)\nwhile True:\n c,_=s.accept(); c.settimeout(1)\n" \
                 " try: d=c.recv(99)\n except OSError: d=b''\n print(len(d), flush=True); c.close()\n"
        p = subprocess.Popen(setpriv(self.b) + ["/usr/bin/python3", "-c", script, sock], stdout=subprocess.PIPE)
        self.addCleanup(lambda: (p.kill(), p.communicate()))
        self.assertEqual(p.stdout.readline(), b"up\n")
        uid_b = pwd.getpwnam(self.b).pw_uid
        for as_root in (False, True):
            if as_root:
                r = subprocess.run([CTL, "--socket", sock, "jobs"], capture_output=True, timeout=30)
                rc, err = r.returncode, r.stderr.decode()
            else:
                rc, _, err = self.ctl("--socket", sock, "jobs")
            self.assertEqual(rc, 3, err)
            self.assertIn("%s is served by uid %d, neither root nor you: not talking to it" % (sock, uid_b), err)
            self.assertEqual(p.stdout.readline(), b"0\n", "the impostor got nothing")

    def test_a_directory_renamed_in_and_out_gets_nothing(self):
        # B swaps a directory holding its listening socket in and out of A's
        # socket directory path (no XDG_RUNTIME_DIR, none there yet), racing
        # the client between looking at the path and connecting through it.
        # A's client opens the directory without following what is renamed
        # in and checks it is A's, and checks who answers: B gets no byte,
        # and every command runs, tracked.
        stop = os.path.join(self.tmp, "stop")
        mine = tempfile.mkdtemp(prefix="rt-impostor-")
        self.addCleanup(shutil.rmtree, mine, True)
        os.chmod(mine, 0o755)
        os.chown(mine, pwd.getpwnam(self.b).pw_uid, -1)
        imp = subprocess.Popen(setpriv(self.b) + ["/usr/bin/python3", "-c", IMPOSTOR, mine, self.tmp_dir, stop],
                               stdout=subprocess.PIPE)
        self.addCleanup(lambda: (imp.kill(), imp.communicate()))
        mark = os.path.join(self.home, "ran")
        tries = 40
        for i in range(tries):
            rc, _, err = self.ctl("run", "-q", "-n", "race%d" % i, "--", "sh", "-c", "echo %d >> %s" % (i, mark))
            self.assertEqual(rc, 0, err)
            self.assertNotIn("untracked", err)
            self.stop_daemons()
            # Only A's own directory is removed (sticky /tmp: B cannot move it).
            try:
                if os.lstat(self.tmp_dir).st_uid == self.uid:
                    shutil.rmtree(self.tmp_dir)
            except FileNotFoundError:
                pass
        with open(stop, "w"):
            pass
        got = json.loads(imp.communicate(timeout=30)[0])
        print("impostor: %(swaps)d swaps, %(connections)d connections" % got, file=sys.stderr)
        self.assertGreater(got["swaps"], 1000, "the race ran")
        self.assertEqual(got["bytes"], "", "the impostor received a call")
        self.assertEqual(got["connections"], 0)
        with open(mark) as f:
            self.assertEqual(f.read().split(), [str(i) for i in range(tries)])

    def test_pending_uploads_keep_the_daemon(self):
        # A daemon idle for 1 s stays while its upload cannot be sent, and
        # exits once it has been.
        api = SentinelStandin("tok-idle", None, [("AK", "SK")])
        self.addCleanup(api.close)
        api.fail = 503
        d = Daemon(interval=0.2, args=["--exit-on-idle", "1"]).start()
        self.addCleanup(d.cleanup)
        e = dict(os.environ, RESOURCE_TRACKER_SOCKET=d.socket, SENTINEL_API_TOKEN="tok-idle",
                 SENTINEL_API_URL=api.url, TRACKER_UPLOAD_INTERVAL="1")
        p = subprocess.run([CTL, "run", "-q", "--", "sleep", "6"], env=e, capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        # run says so as it happens, not only in status.
        err = p.stderr.decode()
        self.assertIn("warn: the run cannot be registered with Sentinel yet (start run: HTTP 503", err)
        self.assertRegex(err, r"warn: uploads fall behind: \d+ batches wait; last error: start run: HTTP 503")
        time.sleep(4)
        self.assertIsNone(d.proc.poll(), "the daemon idled out with an upload pending")
        api.fail = None
        wait_for(lambda: api.finishes(), timeout=60, what="the upload")
        wait_for(lambda: d.proc.poll() is not None, timeout=30, what="the idle daemon to exit")
        self.assertEqual(d.stop(), 0)
        self.assertIn("idle, but uploads are pending", d.read_log())


if __name__ == "__main__":
    unittest.main()
