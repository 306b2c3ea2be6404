"""resource-trackerctl run (DESIGN §4, §6): exit status, forwarded signals,
metadata flags and TRACKER_* variables, sample output (stderr, --output,
--format csv, --quiet), the private user daemon, and the client's exit codes."""

import json
import os
import pwd
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import (CTL, DAEMON, IFACE, SANITIZER_MARKS, Connection, Daemon, DaemonTest, Terminal,  # noqa: E402
                   TestUsers, UsersDaemonTest, UsersTest, job_samples, read_json_lines, run_ctl, setpriv,
                   split_summary, wait_for, world_path)

CSV_FIELDS = 32
PY = "/usr/bin/python3"

# A command that reports its signals: handlers for the forwarded ones write
# the signal number to a file and exit with 100 + N.
SIGNAL_LOGGER = r"""
import os, signal, sys, time
out = sys.argv[1]
def handler(n, f):
    with open(out, "w") as fh:
        fh.write(str(n))
    os._exit(100 + n)
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGQUIT):
    signal.signal(s, handler)
open(out + ".ready", "w").close()
time.sleep(60)
os._exit(1)
"""


class Run(DaemonTest):
    interval = 0.2

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="rt-run-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.tmp]))

    def path(self, name):
        return os.path.join(self.tmp, name)

    def job(self, ref):
        return self.d.call("GetJob", {"name": ref} if isinstance(ref, str) else {"id": ref})["job"]

    def test_exit_status_is_propagated(self):
        cases = [("exit 0", 0, "finished", None), ("exit 3", 3, "failed", None),
                 ("kill -TERM $$", 143, "failed", 15), ("kill -KILL $$", 137, "failed", 9)]
        for i, (script, rc_want, state, sig) in enumerate(cases):
            name = "exit-%d" % i
            rc, _, err = run_ctl(self.d, "run", "-q", "-n", name, "--", "sh", "-c", "sleep 0.3; " + script)
            self.assertEqual(rc, rc_want, err)
            j = self.job(name)
            self.assertEqual((j["state"], j["exit_code"], j["signal"]), (state, rc_want, sig), script)
        rc, _, err = run_ctl(self.d, "run", "-q", "--", "/nonexistent/command")
        self.assertEqual(rc, 127, err)
        self.assertIn("cannot run /nonexistent/command", err)
        rc, _, err = run_ctl(self.d, "run", "-q", "--", self.tmp)  # a directory: not executable
        self.assertEqual(rc, 126, err)

    def test_a_command_that_never_started_is_no_run(self):
        # Two real runs of "train", then one whose command cannot be executed:
        # its job says so, gets no "Next run" line, and is in no history.
        for _ in range(2):
            run_ctl(self.d, "run", "-q", "-n", "train", "--", "sh", "-c", "sleep 0.3", check=0)
        rc, _, err = run_ctl(self.d, "run", "-s", "-n", "train", "--", "/nonexistent/train.py")
        self.assertEqual(rc, 127, err)
        self.assertIn("cannot run /nonexistent/train.py", err)
        self.assertIn("exit status 127 (the command did not start)", err)
        self.assertNotIn("Next run", err)
        bad = self.job("train")
        self.assertEqual((bad["not_started"], bad["exit_code"]), (True, 127))
        rc, _, err = run_ctl(self.d, "recommend", str(bad["id"]))
        self.assertEqual(rc, 1, err)
        self.assertIn("did not start (exit status 127): nothing ran to size", err)
        # The next real run's history holds the two real ones only.
        run_ctl(self.d, "run", "-q", "-n", "train", "--", "sh", "-c", "sleep 0.3", check=0)
        good = self.job("train")
        self.assertFalse(good["not_started"])
        rec = json.loads(run_ctl(self.d, "recommend", "--json", str(good["id"]), check=0)[1])
        self.assertEqual(len(rec["runs"]), 3, rec["runs"])
        self.assertNotIn(bad["id"], [r["id"] for r in rec["runs"]])
        self.assertEqual(run_ctl(self.d, "status", str(bad["id"]), check=0)[1].splitlines()[0],
                         "Job %d (train): failed, exit status 127 (the command did not start)" % bad["id"])

    def run_background(self, *args, env=None):
        e = dict(os.environ, RESOURCE_TRACKER_SOCKET=self.d.socket, **(env or {}))
        p = subprocess.Popen([CTL, "run"] + list(args), env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        return p

    def test_signals_are_forwarded(self):
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1):
            out = self.path("sig-%d" % sig)
            p = self.run_background("-q", "-n", "sig-%d" % sig, "--", PY, "-c", SIGNAL_LOGGER, out)
            wait_for(lambda: os.path.exists(out + ".ready"), timeout=30, what="the command's handlers")
            os.kill(p.pid, sig)
            _, err = p.communicate(timeout=30)
            self.assertEqual(p.returncode, 100 + sig, err)
            with open(out) as f:
                self.assertEqual(int(f.read()), sig)
            j = self.job("sig-%d" % sig)
            self.assertEqual((j["state"], j["exit_code"]), ("failed", 100 + sig))
        # Default disposition: the command dies of the signal, and so does our status.
        p = self.run_background("-q", "-n", "sig-default", "--", "sleep", "30")
        wait_for(lambda: self.d.call("ListJobs", {"running_only": True})["jobs"], what="the job")
        os.kill(p.pid, signal.SIGTERM)
        p.communicate(timeout=30)
        self.assertEqual(p.returncode, 128 + signal.SIGTERM)
        j = self.job("sig-default")
        self.assertEqual((j["state"], j["exit_code"], j["signal"]), ("failed", 143, 15))

    def test_metadata_flags_and_environment(self):
        env = {"TRACKER_PROJECT_NAME": "from-env", "TRACKER_TEAM": "env-team", "TRACKER_ENV": "staging",
               "TRACKER_JOB_NAME": "env-name", "TRACKER_EXECUTOR": "env-exec"}
        rc, _, err = run_ctl(self.d, "run", "-q", "--project-name", "proj", "--stage-name", "train",
                             "--task-name", "t1", "--language", "C", "--orchestrator", "make",
                             "--external-run-id", "r-42", "--container-image", "debian:12",
                             "--executor=cli", "--tag", "a=1", "--tag", "b=two", "--interval", "0.4",
                             "--job-name", "meta", "--", "sh", "-c", "sleep 0.5", env=env)
        self.assertEqual(rc, 0, err)
        j = self.job("meta")
        self.assertEqual(j["metadata"], {
            "project_name": "proj", "stage_name": "train", "task_name": "t1", "language": "C",
            "orchestrator": "make", "external_run_id": "r-42", "container_image": "debian:12",
            "executor": "cli", "tags": ["a=1", "b=two"], "team": "env-team", "env": "staging",
            "command": ["sh", "-c", "sleep 0.5"]})
        self.assertEqual(j["interval_secs"], 0.4)
        # Variables alone, the job name included.
        rc, _, err = run_ctl(self.d, "run", "-q", "--", "true", env=env)
        self.assertEqual(rc, 0, err)
        j = self.job("env-name")
        self.assertEqual(j["metadata"], {"project_name": "from-env", "team": "env-team", "env": "staging",
                                         "executor": "env-exec", "command": ["true"]})

    def samples_of(self, name):
        j = self.job(name)
        return self.d.call("GetJobSamples", {"id": j["id"], "limit": 10000})["samples"]

    def test_tracker_quiet_booleans(self):
        for i, (value, quiet) in enumerate([("1", True), ("true", True), ("yes", True), ("TRUE", True),
                                            ("0", False), ("false", False), ("no", False)]):
            name = "quiet-%d" % i
            rc, out, err = run_ctl(self.d, "run", "-n", name, "--", "sleep", "0.5",
                                   env={"TRACKER_QUIET": value})
            self.assertEqual(rc, 0, err)
            self.assertEqual(out, "")
            if quiet:
                self.assertEqual(err, "", value)
            else:
                samples, summary = split_summary(err)
                self.assertEqual(read_json_lines(samples), self.samples_of(name), value)
                self.assertTrue(summary.startswith("Job %d (%s) finished after " % (self.job(name)["id"], name)))
        rc, _, err = run_ctl(self.d, "run", "--", "true", env={"TRACKER_QUIET": "maybe"})
        self.assertEqual(rc, 2, err)
        self.assertIn("TRACKER_QUIET", err)
        # The flag wins over the variable.
        rc, _, err = run_ctl(self.d, "run", "--quiet", "--", "sleep", "0.3", env={"TRACKER_QUIET": "0"})
        self.assertEqual((rc, err), (0, ""))

    def test_summary_ends_with_the_next_runs_resources(self):
        # recommend's answer over this run and the earlier ones of its name.
        for n in range(2):
            rc, _, err = run_ctl(self.d, "run", "-n", "nextrun", "--", "sleep", "0.3")
            self.assertEqual(rc, 0, err)
            rec = json.loads(run_ctl(self.d, "recommend", "nextrun", "--json")[1])
            self.assertEqual(len(rec["runs"]), n + 1)
            r = rec["recommendation"]
            want = "  Next run %d vCPU%s, %d MiB memory (Slurm: %s)\n" % (
                r["cpus"], "" if r["cpus"] == 1 else "s", r["memory_mib"], r["slurm"])
            self.assertTrue(split_summary(err)[1].endswith(want), err)

    def test_samples_on_stderr_by_default(self):
        rc, out, err = run_ctl(self.d, "run", "-n", "stderr", "--", "sleep", "0.7")
        self.assertEqual((rc, out), (0, ""))
        samples = read_json_lines(split_summary(err)[0])
        self.assertGreaterEqual(len(samples), 3)
        self.assertEqual(samples, self.samples_of("stderr"))
        self.assertTrue(all(s["job_name"] == "stderr" for s in samples))

    def test_output_file_json_and_csv(self):
        out = self.path("samples.jsonl")
        rc, _, err = run_ctl(self.d, "run", "--output", out, "-n", "out-json", "--", "sleep", "0.7")
        self.assertEqual((rc, split_summary(err)[0]), (0, ""), "only the summary on stderr")
        with open(out) as f:
            self.assertEqual(read_json_lines(f.read()), self.samples_of("out-json"))
        csv = self.path("samples.csv")
        rc, _, err = run_ctl(self.d, "run", "--format", "csv", "-o", csv, "-n", "out-csv", "--",
                             "sleep", "0.7")
        self.assertEqual((rc, split_summary(err)[0]), (0, ""))
        with open(csv) as f:
            lines = f.read().splitlines()
        samples = self.samples_of("out-csv")
        self.assertTrue(lines[0].startswith("timestamp,system_processes,"))
        self.assertEqual(len(lines[0].split(",")), CSV_FIELDS)
        self.assertEqual(len(lines) - 1, len(samples))
        for line, s in zip(lines[1:], samples):
            f = line.split(",")
            self.assertEqual(len(f), CSV_FIELDS, line)
            self.assertEqual(f[0], "%d.%03d" % divmod(s["timestamp_ms"], 1000))
            self.assertEqual(int(f[21]), s["tracked_pid"])
        # CSV on stderr, and TRACKER_OUTPUT as the file.
        rc, _, err = run_ctl(self.d, "run", "--format=csv", "-n", "err-csv", "--", "sleep", "0.5")
        self.assertEqual(rc, 0)
        lines = split_summary(err)[0].splitlines()
        self.assertEqual(lines[0].split(",")[0], "timestamp")
        self.assertEqual(len(lines) - 1, len(self.samples_of("err-csv")))
        env_out = self.path("env.jsonl")
        rc, _, err = run_ctl(self.d, "run", "-n", "env-out", "--", "sleep", "0.5",
                             env={"TRACKER_OUTPUT": env_out})
        self.assertEqual((rc, split_summary(err)[0]), (0, ""))
        with open(env_out) as f:
            self.assertEqual(len(read_json_lines(f.read())), len(self.samples_of("env-out")))

    def test_quiet(self):
        rc, out, err = run_ctl(self.d, "run", "-q", "-n", "q", "--", "sleep", "0.5")
        self.assertEqual((rc, out, err), (0, "", ""))
        self.assertGreaterEqual(self.job("q")["summary"]["samples"], 2)

    def test_client_exit_codes(self):
        rc, _, err = run_ctl(None, "--socket", self.path("nobody-listens"), "jobs")
        self.assertEqual(rc, 3, err)
        self.assertIn("cannot reach the daemon", err)
        # An explicit socket is never replaced by a private daemon; run runs
        # its command untracked, with its exit status.
        rc, _, err = run_ctl(None, "--socket", self.path("nobody-listens"), "run", "--", "sh", "-c", "exit 7")
        self.assertEqual(rc, 7, err)
        self.assertIn("warn: cannot reach the daemon at %s" % self.path("nobody-listens"), err)
        self.assertFalse(os.path.exists(self.path("nobody-listens")))
        for args in (["status", "424242"], ["stop", "no-such-job"], ["samples", "424242"],
                     ["start", "--pid", "999999999"]):
            rc, _, err = run_ctl(self.d, *args)
            self.assertEqual(rc, 5, "%s: %s" % (args, err))
        for args in (["run"], ["run", "--format", "xml", "--", "true"], ["run", "--interval", "abc", "--", "true"],
                     ["no-such-verb"], ["jobs", "--bogus"],
                     ["start"], ["stop"], ["samples"], ["samples", "1", "--format", "xml"], ["--bogus", "jobs"]):
            rc, _, err = run_ctl(self.d, *args)
            self.assertEqual(rc, 2, "%s: %s" % (args, err))
            self.assertTrue(err, args)

    def test_command_survives_the_daemon(self):
        # The daemon dies under a running command: the command goes on, and
        # run still exits with its status.
        d = Daemon(interval=0.2).start()
        self.addCleanup(d.cleanup)
        flag, started = self.path("go"), self.path("started")
        e = dict(os.environ, RESOURCE_TRACKER_SOCKET=d.socket)
        script = "touch %s; while [ ! -e %s ]; do sleep 0.05; done; exit 6" % (started, flag)
        p = subprocess.Popen([CTL, "run", "--", "sh", "-c", script], env=e, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.communicate()))
        wait_for(lambda: os.path.exists(started), what="the command to run")
        wait_for(lambda: d.call("ListJobs")["jobs"][0]["summary"]["samples"] >= 1, what="a sample")
        d.kill9()
        d.check_log_clean()
        time.sleep(0.3)
        self.assertIsNone(p.poll(), "run must not end with the daemon")
        open(flag, "w").close()
        _, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 6, err)
        self.assertIn(b"lost the daemon", err)
        self.assertIn(b"the daemon did not come back", err)

    def test_idle_exit(self):
        d = Daemon(interval=0.2, args=["--exit-on-idle", "1"]).start()
        self.addCleanup(d.cleanup)
        p = subprocess.Popen(["sleep", "2.5"])
        self.addCleanup(p.wait)
        d.call("StartJob", {"pid": p.pid})
        time.sleep(2)
        self.assertIsNone(d.proc.poll(), "exited while a job was running")
        wait_for(lambda: d.proc.poll() is not None, timeout=15, what="the idle daemon to exit")
        self.assertEqual(d.stop(), 0)
        self.assertIn("idle for 1 s, exiting", d.read_log())


class AtATerminal(DaemonTest):
    """run as a person meets it in an 80x24 terminal (tmux): the command's
    output undisturbed, the summary after it; samples only for scripts."""
    interval = 0.2

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="rt-tty-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.tmp]))
        self.term = Terminal(self, self.tmp)

    def run_in_terminal(self, run_args, after=""):
        """`run RUN_ARGS -- COUNTER` in the terminal, then AFTER; the screen once the shell is done."""
        counter = "sh -c 'for i in 0 1 2 3; do echo $i; sleep 0.5; done; exit 3'"
        self.term.start("%s %s run %s -- %s %s; echo EXIT=$?; sleep 600"
                        % (Terminal.env_line(self.d), CTL, run_args, counter, after))
        self.term.wait(lambda s: "EXIT=" in s, "run to end", timeout=30)
        return self.term.history()

    def test_output_undisturbed_then_the_summary(self):
        lines = self.run_in_terminal("-n tty").splitlines()
        self.assertEqual(lines[:4], ["0", "1", "2", "3"], "the command's lines, one after the other")
        job = self.d.call("GetJob", {"name": "tty"})["job"]
        self.assertGreaterEqual(job["summary"]["samples"], 5)  # samples were taken, not shown
        self.assertEqual(lines[4], "Job %d (tty) failed after %s: exit status 3"
                         % (job["id"], lines[4].split(" after ")[1].split(":")[0]))
        self.assertTrue(lines[5].startswith("  CPU "), lines)
        self.assertEqual(lines[-1], "EXIT=3")
        self.assertNotIn("{", "\n".join(lines), "no JSON on the terminal")
        self.assertTrue(all(len(ln) <= 80 for ln in lines))

    def test_scripts_get_samples(self):
        # stderr into a pipe (2>&1 | tee): the samples, as the Rust tracker prints them.
        log = os.path.join(self.tmp, "log")
        lines = self.run_in_terminal("-n piped", "2>&1 | tee %s" % log).splitlines()
        with open(log) as f:
            samples, summary = split_summary(f.read())
        job = self.d.call("GetJob", {"name": "piped"})["job"]
        got = read_json_lines("\n".join(ln for ln in samples.splitlines() if ln.startswith("{")))
        self.assertEqual(got, job_samples(self.d, job["id"]))
        self.assertTrue(summary.startswith("Job %d (piped) failed" % job["id"]), summary)
        self.assertIn("0", lines)
        # --format at a terminal: samples asked for, samples shown.
        self.term = Terminal(self, tempfile.mkdtemp(dir=self.tmp))
        screen = self.run_in_terminal("-n asked -f json")
        self.assertIn('{"actual_interval_ms":', screen)

    def test_summary_alone_for_scripts(self):
        rc, out, err = run_ctl(self.d, "run", "--summary", "-n", "sum", "--", "sleep", "0.5",
                               env={"TRACKER_OUTPUT": os.path.join(self.tmp, "ignored")})
        self.assertEqual((rc, out), (0, ""))
        samples, summary = split_summary(err)
        self.assertEqual(samples, "")
        self.assertTrue(summary.startswith("Job "), err)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "ignored")), "the flag wins over the variable")
        for args in (["-s", "-q"], ["-s", "-o", "x"], ["-s", "--format", "csv"], ["--json", "-s"]):
            rc, out, err = run_ctl(self.d, "run", *args, "--", "true")
            self.assertEqual((rc, out), (2, ""), args)
            self.assertIn("--summary prints no samples", err)


def peer_pid(path):
    with Connection(path) as c:
        creds = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)[0]


def system_daemon_answers():
    try:
        Connection("/run/resource-tracker/com.sparecores.ResourceTracker", timeout=2).close()
        return True
    except OSError:
        return False


class PrivateDaemon(unittest.TestCase):
    def setUp(self):
        if system_daemon_answers():
            self.skipTest("a system daemon is running on this machine")
        self.tmp = tempfile.mkdtemp(prefix="rt-priv-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.tmp]))
        self.home, self.run_dir = os.path.join(self.tmp, "home"), os.path.join(self.tmp, "run")
        os.mkdir(self.home)
        os.mkdir(self.run_dir, 0o700)
        self.env = {k: v for k, v in os.environ.items() if k not in ("RESOURCE_TRACKER_SOCKET", "XDG_STATE_HOME")}
        self.env.update(HOME=self.home, XDG_RUNTIME_DIR=self.run_dir, RESOURCE_TRACKERD=DAEMON)
        self.sock = os.path.join(self.run_dir, "resource-tracker", "com.sparecores.ResourceTracker")
        self.state = os.path.join(self.home, ".local", "state", "resource-tracker")
        self.daemon_pid = None
        self.addCleanup(self.stop_daemon)

    def stop_daemon(self):
        if self.daemon_pid:
            try:
                os.kill(self.daemon_pid, signal.SIGTERM)
                wait_for(lambda: not os.path.exists("/proc/%d" % self.daemon_pid), timeout=30,
                         what="the private daemon to exit")
            except ProcessLookupError:
                pass
            self.daemon_pid = None

    def daemons(self):
        """PIDs of daemons serving our socket."""
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if os.path.basename(argv[0]) == b"resource-trackerd" and self.sock.encode() in argv:
                found.append(int(pid))
        return found

    def log(self, state=None):
        with open(os.path.join(state or self.state, "daemon.log"), errors="replace") as f:
            return f.read()

    def test_started_when_none_is_reachable(self):
        # Upload settings and metadata of the first client go with its job,
        # never into the daemon's environment, where they would stay.
        secrets = {"SENTINEL_API_URL": "http://127.0.0.1:9/", "SENTINEL_EXTRA": "x",
                   "TRACKER_UPLOAD_INTERVAL": "5", "TRACKER_PROJECT_NAME": "p1",
                   # nor the service manager's, of a unit the client runs in
                   "NOTIFY_SOCKET": "/run/nowhere", "WATCHDOG_USEC": "1000000",
                   "CREDENTIALS_DIRECTORY": "/run/credentials/some.service"}
        p = subprocess.run([CTL, "run", "-n", "private", "--", "sh", "-c", "sleep 0.5; exit 4"],
                           env=dict(self.env, **secrets), capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 4, p.stderr)
        self.assertTrue(read_json_lines(split_summary(p.stderr.decode())[0]), "samples on stderr")
        self.daemon_pid = peer_pid(self.sock)
        with Connection(self.sock) as c:
            info = c.call("Info")
            [job] = c.call("ListJobs")["jobs"]
        self.assertTrue(info["user_mode"])
        self.assertEqual((job["name"], job["state"], job["exit_code"]), ("private", "failed", 4))
        self.assertEqual(job["metadata"]["project_name"], "p1")
        with open("/proc/%d/cmdline" % self.daemon_pid) as f:
            argv = f.read().split("\0")
        self.assertIn("--exit-on-idle", argv)
        with open("/proc/%d/environ" % self.daemon_pid, "rb") as f:
            names = [v.split(b"=", 1)[0].decode() for v in f.read().split(b"\0") if v]
        self.assertIn("HOME", names)
        self.assertEqual([n for n in names if n.startswith(("SENTINEL_", "TRACKER_", "NOTIFY_", "WATCHDOG_", "CREDENTIALS_"))], [])
        # A private daemon's files are its owner's alone.
        self.assertEqual(stat.S_IMODE(os.stat(self.sock).st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.dirname(self.sock)).st_mode), 0o700)
        for root, dirs, files in os.walk(self.state):
            for n in dirs:
                self.assertEqual(stat.S_IMODE(os.stat(os.path.join(root, n)).st_mode) & 0o077, 0, n)
            for n in files:
                self.assertEqual(stat.S_IMODE(os.stat(os.path.join(root, n)).st_mode) & 0o077, 0, n)
        # The next run reuses it.
        p = subprocess.run([CTL, "run", "-q", "--", "true"], env=self.env, capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(peer_pid(self.sock), self.daemon_pid)
        self.stop_daemon()
        log = self.log()
        for mark in SANITIZER_MARKS:
            self.assertNotIn(mark, log)
        self.assertIn("resource-trackerd %s started" % info["version"], log)  # before it served
        self.assertIn("shutting down", log)  # after

    def test_a_daemon_that_cannot_start_says_why(self):
        # The state directory cannot be created: the daemon's own message, at
        # once; run runs its command all the same, untracked, and says so in
        # one line.
        env = dict(self.env, XDG_STATE_HOME="/etc/hostname")
        t0 = time.monotonic()
        p = subprocess.run([CTL, "jobs"], env=env, capture_output=True, timeout=60)
        err = p.stderr.decode()
        self.assertEqual(p.returncode, 3, err)
        self.assertLess(time.monotonic() - t0, 5, "it must not wait for a socket that never comes")
        self.assertIn("the private daemon did not start", err)
        self.assertIn("cannot create state directory /etc/hostname/resource-tracker: Not a directory", err)
        mark = os.path.join(self.tmp, "ran")
        p = subprocess.run([CTL, "run", "-q", "--", "sh", "-c", "touch %s; exit 7" % mark], env=env,
                           capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 7, p.stderr)
        self.assertTrue(os.path.exists(mark))
        self.assertEqual(p.stderr.decode(), "resource-trackerctl: warn: the private daemon did not start: cannot "
                         "create state directory /etc/hostname/resource-tracker: Not a directory; running sh "
                         "untracked\n")
        self.assertEqual(self.daemons(), [])
        self.assertFalse(os.path.exists(self.sock))

    def test_home_without_state_falls_back_to_the_runtime_dir(self):
        # A service account whose home does not exist, as in the audit:
        # env -i, setpriv to the user, HOME=/nonexistent.
        users = TestUsers()
        self.addCleanup(users.cleanup)
        user = users.user("nohome")
        os.chown(self.run_dir, pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid)
        env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "XDG_RUNTIME_DIR": self.run_dir,
               "RESOURCE_TRACKERD": world_path(DAEMON)}
        env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
        p = subprocess.run(setpriv(user) + [world_path(CTL), "run", "-q", "--", "true"], env=env,
                           capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        [self.daemon_pid] = self.daemons()
        state = os.path.join(self.run_dir, "resource-tracker", "state")
        with Connection(self.sock) as c:
            [job] = c.call("ListJobs")["jobs"]
        self.assertEqual((job["state"], job["exit_code"]), ("finished", 0))
        self.assertTrue(os.path.exists(os.path.join(state, "jobs", str(job["id"]), "job.json")))
        self.stop_daemon()
        log = self.log(state)
        self.assertIn("cannot create state directory /nonexistent/.local/state/resource-tracker", log)
        self.assertIn("keeping jobs in %s instead" % state, log)

    def test_concurrent_first_runs_start_one_daemon(self):
        procs = [subprocess.Popen([CTL, "run", "-q", "-n", "c%d" % i, "--", "sleep", "0.3"], env=self.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(4)]
        for p in procs:
            _, err = p.communicate(timeout=60)
            self.assertEqual((p.returncode, err), (0, b""))
        [self.daemon_pid] = self.daemons()
        with Connection(self.sock) as c:
            jobs = c.call("ListJobs")["jobs"]
        self.assertEqual(sorted(j["name"] for j in jobs), ["c0", "c1", "c2", "c3"])
        self.stop_daemon()
        log = self.log()
        self.assertEqual(log.count("resource-trackerd: info: resource-trackerd "), 2, log)  # started, stopped
        for bad in ("already listening", "skipping job", "warning", "error"):
            self.assertNotIn(bad, log)

class OutputFile(UsersDaemonTest):
    """root's run --output FILE in a directory a user can write: a link the
    user planted there is not followed, a FIFO of theirs does not hold it."""

    def setUp(self):
        self.uid = pwd.getpwnam(self.u).pw_uid
        self.tmp = tempfile.mkdtemp(prefix="rt-output-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.tmp]))
        self.victim = os.path.join(self.tmp, "victim")
        with open(self.victim, "w") as f:
            f.write("precious\n")
        self.shared = os.path.join(self.tmp, "shared")  # the user's, as a home or a project directory
        os.mkdir(self.shared)
        os.chown(self.shared, self.uid, -1)

    def as_user(self, *cmd):
        subprocess.run(setpriv(self.u) + list(cmd), check=True)

    def test_a_planted_link_is_not_followed(self):
        out = os.path.join(self.shared, "out.csv")
        self.as_user("ln", "-s", self.victim, out)
        mark = os.path.join(self.tmp, "ran")
        rc, _, err = run_ctl(self.d, "run", "-f", "csv", "-o", out, "--", "touch", mark)
        self.assertEqual(rc, 1, err)
        self.assertIn("cannot open output file %s: a symbolic link another user could have put there is not "
                      "followed" % out, err)
        with open(self.victim) as f:
            self.assertEqual(f.read(), "precious\n")
        # Nor in a directory others may write (not sticky), even a link of root's.
        os.chmod(self.shared, 0o777)
        os.unlink(out)
        os.symlink(self.victim, out)
        self.assertEqual(run_ctl(self.d, "run", "-o", out, "--", "true")[0], 1)
        with open(self.victim) as f:
            self.assertEqual(f.read(), "precious\n")

    def test_what_is_ours_is_followed_and_a_fifo_does_not_block(self):
        # A link of root's in root's directory, and /dev/stdout, are written through.
        mine = os.path.join(self.tmp, "mine.csv")
        os.symlink(self.victim, mine)
        rc, _, err = run_ctl(self.d, "run", "-f", "csv", "-o", mine, "--", "sleep", "0.5")
        self.assertEqual(rc, 0, err)
        with open(self.victim) as f:
            self.assertTrue(f.read().startswith("timestamp,"), "truncated and written")
        rc, out, err = run_ctl(self.d, "run", "-f", "csv", "-o", "/dev/stdout", "--", "sleep", "0.5")
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.startswith("timestamp,"), out)
        # The user's FIFO nobody reads: refused at once, not waited on.
        fifo = os.path.join(self.shared, "fifo")
        self.as_user("mkfifo", fifo)
        rc, _, err = run_ctl(self.d, "run", "-o", fifo, "--", "true", timeout=20)
        self.assertEqual(rc, 1, err)
        self.assertIn("No such device or address", err)


class WhateverTheDaemonSays(UsersTest):
    """run runs its command however registering it fails: a refused
    connection, a limit, a daemon that is not there, arguments, metadata
    and TRACKER_* values that are not UTF-8. One warn: line says why."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.uid = pwd.getpwnam(cls.u).pw_uid
        cls.conf = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
        cls.conf.write("limits: { max_connections_per_user = 2; max_jobs_per_user = 1; };\n")
        cls.conf.close()
        os.chmod(cls.conf.name, 0o644)
        cls.addClassCleanup(os.unlink, cls.conf.name)
        cls.d = Daemon(interval=0.2, args=["--config", cls.conf.name])
        cls.addClassCleanup(cls.d.cleanup)
        cls.d.start()
        cls.addClassCleanup(cls.d.stop)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-whatever-")
        os.chown(self.tmp, self.uid, -1)
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.tmp]))

    def run_untracked(self, why, env=None, socket=True):
        mark = os.path.join(self.tmp, "ran")
        rc, _, err = run_ctl(self.d if socket else None, "run", "-q", "--", "sh", "-c", "touch %s; exit 9" % mark,
                             user=self.u, env=env)
        self.assertEqual(rc, 9, err)
        self.assertTrue(os.path.exists(mark), "the command ran")
        os.unlink(mark)
        self.assertRegex(err, r"\Aresource-trackerctl: warn: %s; running sh untracked\n\Z" % why)

    def holder(self, script):
        p = subprocess.Popen(setpriv(self.u) + [PY, "-c", script, self.d.socket], stdout=subprocess.PIPE)
        self.addCleanup(lambda: (p.kill(), p.communicate()))
        self.assertEqual(p.stdout.readline(), b"ready\n")

    def test_a_refused_connection(self):
        # The user's connections are all taken (max_connections_per_user 2).
        self.holder("import socket,sys,time\nss=[socket.socket(socket.AF_UNIX) for _ in range(2)]\n"
                    "[s.connect(sys.argv[1]) or s.sendall(b'{\"method\":\"%s.Ping\"}\\0') or s.recv(99) for s in ss]\n"
                    "print('ready', flush=True); time.sleep(60)\n" % IFACE)
        self.run_untracked(r"limit reached: connections_per_user \(at most 2\)")

    def test_a_limit_reached(self):
        # Its one running job (max_jobs_per_user 1).
        self.holder("import socket,sys,time,os,json\ns=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
                    "s.sendall(json.dumps({'method':'%s.StartJob','parameters':{'pid':os.getpid()}}).encode()+b'\\0')\n"
                    "assert b'job' in s.recv(65536); s.close(); print('ready', flush=True); time.sleep(60)\n" % IFACE)
        self.run_untracked(r"limit reached: jobs_per_user \(at most 1\)")

    def test_no_daemon(self):
        self.run_untracked(r"cannot reach the daemon at /nonexistent/s: No such file or directory",
                           env={"RESOURCE_TRACKER_SOCKET": "/nonexistent/s"}, socket=False)

    def test_bytes_that_are_not_utf8(self):
        # A Latin-1 file name through a glob, in the arguments, a tag and a
        # TRACKER_* variable: carried as \xHH, the command gets its bytes.
        with open(os.path.join(self.tmp.encode(), b"caf\xe9.txt"), "w"):
            pass
        env = dict(os.environ, RESOURCE_TRACKER_SOCKET=self.d.socket)
        env = {k.encode(): v.encode() for k, v in env.items()}
        env[b"TRACKER_PROJECT_NAME"] = b"proj\xff"
        p = subprocess.run(setpriv(self.u) + [world_path(CTL).encode(), b"run", b"-q", b"-n", b"latin",
                                              b"--tag", b"k=v\xe9", b"--", b"sh", b"-c", b"ls caf*"],
                           cwd=self.tmp, env=env, capture_output=True, timeout=60)
        self.assertEqual((p.returncode, p.stderr), (0, b""))
        self.assertEqual(p.stdout, b"caf\xe9.txt\n", "ls got the bytes")
        p = subprocess.run(setpriv(self.u) + [world_path(CTL).encode(), b"run", b"-q", b"-n", b"latin2", b"--",
                                              b"ls", b"caf\xe9.txt"],
                           cwd=self.tmp, env=env, capture_output=True, timeout=60)
        self.assertEqual((p.returncode, p.stderr, p.stdout), (0, b"", b"caf\xe9.txt\n"))
        job = self.d.call("GetJob", {"name": "latin2", "owner_uid": self.uid})["job"]
        self.assertEqual(job["metadata"]["command"], ["ls", "caf\\xe9.txt"])
        self.assertEqual(job["metadata"]["project_name"], "proj\\xff")
        md = self.d.call("GetJob", {"name": "latin", "owner_uid": self.uid})["job"]["metadata"]
        self.assertEqual(md["tags"], ["k=v\\xe9"])
        self.assertEqual(md["command"], ["sh", "-c", "ls caf*"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
