"""The live views against a real daemon: StreamJobs (a job's latest figures
per tick, what each user may see); GetJobProcesses (a job's processes, to
whom may see them); top in a real terminal (tmux, 80x24: the jobs with their
figures and commands, sort keys, help, resizes, the filter, a job's
processes, the terminal restored on q and on SIGTERM; 60 and 40 columns: the
memory figures whole) and piped (plain lines per refresh, commands escaped); status --follow
(the host stream for scripts, JSON Lines and CSV like the Rust tracker
without arguments)."""

import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import (CSV_HEADER, CTL, IFACE, SANITIZER_MARKS, DaemonTest, HandCgroup, Terminal,  # noqa: E402
                   TestUsers, VarlinkError, call_as, run_ctl, spawn_as, stream_as, wait_for)


class StreamJobs(DaemonTest):
    interval = 0.2

    def job(self, name, cmd, user=None):
        """cmd as a job, in a session of its own: its whole tree goes at the end."""
        p = spawn_as(user, cmd, start_new_session=True) if user else subprocess.Popen(cmd, start_new_session=True)

        def kill():
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        self.addCleanup(kill)
        rc, out, err = run_ctl(self.d, "start", "--pid", str(p.pid), "--name", name, user=user)
        self.assertEqual(rc, 0, err)
        return p, int(out)

    def replies(self, n, params=None, conn=None):
        c = conn or self.d.connect()
        c.send(IFACE + ".StreamJobs", params or {}, more=True)
        out = []
        for _ in range(n):
            r = c.recv()
            self.assertNotIn("error", r)
            self.assertTrue(r["continues"])
            out.append(r["parameters"]["jobs"])
        c.close()
        return out

    def test_current_figures_per_tick(self):
        busy, jb = self.job("busy", ["sh", "-c", "while :; do :; done"])
        tree, jt = self.job("tree", ["sh", "-c", "sleep 30 & sleep 30 & wait"])
        wait_for(lambda: all(self.d.call("GetJob", {"id": j})["job"]["summary"]["samples"] >= 3 for j in (jb, jt)),
                 what="samples")
        t0 = time.monotonic()
        replies = self.replies(6)
        # The first at once, then one per tick (0.2 s).
        self.assertLess(time.monotonic() - t0, 3)
        stamps = []
        for jobs in replies:
            self.assertEqual([j["id"] for j in jobs], [jt, jb])  # newest first
            by_id = {j["id"]: j for j in jobs}
            cur = by_id[jb]["current"]
            # A busy loop (on a machine others may load: no fixed share) and sleepers.
            self.assertGreater(cur["cores"], 0)
            self.assertLess(by_id[jt]["current"]["cores"], 0.05)
            self.assertLessEqual(cur["cores"], len(self.d.call("GetHostSample")["sample"]["cpu"]["per_core_pct"]))
            self.assertGreater(cur["rss_bytes"], 0)
            self.assertGreater(cur["pss_bytes"], 0)
            self.assertEqual(by_id[jt]["current"]["processes"], 3)
            self.assertEqual(by_id[jb]["current"]["processes"], 1)
            stamps.append(cur["sampled_at"])
        self.assertEqual(len(set(stamps[1:])), 5, "a new sample in each tick's reply")
        # GetJob and ListJobs carry the figures too; an ended job has none.
        self.assertIsNotNone(self.d.call("GetJob", {"id": jb})["job"]["current"])
        busy.kill()
        wait_for(lambda: self.d.call("GetJob", {"id": jb})["job"]["state"] != "running", what="the end")
        self.assertIsNone(self.d.call("GetJob", {"id": jb})["job"]["current"])

    def test_ended_jobs_stay_for_ended_within(self):
        p, jid = self.job("brief", ["sleep", "0.3"])
        wait_for(lambda: self.d.call("GetJob", {"id": jid})["job"]["state"] == "finished", what="the end")
        self.assertEqual([j["id"] for j in self.replies(1)[0]], [jid])  # default 10 s
        time.sleep(0.5)
        self.assertEqual(self.replies(1, {"ended_within_secs": 0.2})[0], [])
        self.assertEqual([j["state"] for j in self.replies(1, {"ended_within_secs": 60})[0]], ["finished"])

    def test_each_user_sees_what_they_may(self):
        users = TestUsers()
        self.addCleanup(users.cleanup)
        alice, bob = users.user("alice"), users.user("bob")
        _, ja = self.job("a", ["sleep", "30"], user=alice)
        _, jr = self.job("r", ["sleep", "30"])
        ids = lambda replies: [j["id"] for j in replies[0]]
        self.assertEqual(ids(self.replies(1, {"all": True})), [jr, ja])  # root: every job
        self.assertEqual(ids(self.replies(1)), [jr])                     # root's own
        # A user sees their own jobs only, with or without all.
        for params in ({}, {"all": True}):
            for user, want in ((alice, [ja]), (bob, [])):
                replies = stream_as(user, self.d.socket, "StreamJobs", params, 2)
                self.assertEqual([[j["id"] for j in r["jobs"]] for r in replies], [want, want], (user, params))

    def test_bad_calls(self):
        with self.d.connect() as c:
            with self.assertRaises(VarlinkError) as e:
                c.call("StreamJobs", {})  # without "more"
            self.assertEqual(e.exception.error, "org.varlink.service.ExpectedMore")
        for params in ({"ended_within_secs": -1}, {"ended_within_secs": 1e9}, {"all": "yes"}):
            with self.d.connect() as c:
                c.send(IFACE + ".StreamJobs", params, more=True)
                r = c.recv()
                self.assertEqual(r.get("error"), "org.varlink.service.InvalidParameter", params)


class JobProcesses(DaemonTest):
    """GetJobProcesses, what top's drill-down shows: a running job's
    processes now, to whom may see the job."""
    interval = 0.2
    job = StreamJobs.job

    def test_a_jobs_processes_to_whom_may_see_them(self):
        users = TestUsers()
        self.addCleanup(users.cleanup)
        alice, bob = users.user("alice"), users.user("bob")
        p, ja = self.job("a", ["sh", "-c", "sleep 30 & sleep 31; wait"], user=alice)
        _, jr = self.job("r", ["sleep", "32"])
        kids = wait_for(lambda: len(Top.descendants(p.pid)) == 2 and Top.descendants(p.pid), what="alice's sleeps")
        want = {p.pid: "sh -c sleep 30 & sleep 31; wait", kids[0]: "sleep 30", kids[1]: "sleep 31"}
        out = call_as(alice, self.d.socket, "GetJobProcesses", {"id": ja})
        self.assertEqual(out[0][0], "ok", out)
        procs = out[0][1]["processes"]
        self.assertFalse(out[0][1]["truncated"])
        self.assertEqual({q["pid"]: q["command"] for q in procs}, want)
        self.assertEqual({q["uid"] for q in procs}, {pwd.getpwnam(alice).pw_uid})
        self.assertEqual([q["pid"] for q in procs], sorted(want))  # by pid
        self.assertEqual({q["pid"]: q["ppid"] for q in procs if q["pid"] != p.pid}, {k: p.pid for k in kids})
        self.assertTrue(all(q["rss_bytes"] > 0 and q["cpu_secs"] >= 0 and q["state"] in "RSD" for q in procs))
        # Root, an administrator, sees them too; bob does not; nor alice root's job.
        self.assertEqual({q["pid"]: q["command"] for q in self.d.call("GetJobProcesses", {"id": ja})["processes"]},
                         want)
        self.assertEqual(call_as(bob, self.d.socket, "GetJobProcesses", {"id": ja})[0][:2],
                         ("error", IFACE + ".PermissionDenied"))
        self.assertEqual(call_as(alice, self.d.socket, "GetJobProcesses", {"id": jr})[0][:2],
                         ("error", IFACE + ".PermissionDenied"))
        self.assertEqual(call_as(alice, self.d.socket, "GetJobProcesses", {"name": "a"})[0][0], "ok")
        # An ended job has none.
        os.killpg(p.pid, signal.SIGKILL)
        wait_for(lambda: self.d.call("GetJob", {"id": ja})["job"]["state"] != "running", what="the end")
        with self.assertRaises(VarlinkError) as e:
            self.d.call("GetJobProcesses", {"id": ja})
        self.assertEqual(e.exception.error, IFACE + ".JobNotRunning")


    def test_a_cgroup_jobs_processes(self):
        cg = HandCgroup(self, "procs")
        if not cg.roots:
            self.skipTest("no cgroup hierarchy mounted here")
        ps = [cg.spawn("sleep", "30"), cg.spawn("sleep", "31")]
        for q in ps:
            self.addCleanup(lambda q=q: (q.kill(), q.wait()))
        jid = int(run_ctl(self.d, "start", "--cgroup", cg.path, check=0)[1])
        procs = self.d.call("GetJobProcesses", {"id": jid})["processes"]
        self.assertEqual([(q["pid"], q["command"]) for q in procs],
                         sorted([(ps[0].pid, "sleep 30"), (ps[1].pid, "sleep 31")]))


class Top(DaemonTest):
    """resource-trackerctl top in tmux, as a person runs it over SSH."""
    interval = 0.2

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="rt-top-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.term = Terminal(self, self.tmp)

    def job(self, name, cmd):
        p = subprocess.Popen(cmd, start_new_session=True)
        self.addCleanup(lambda: (p.kill(), p.wait()))
        self.assertEqual(run_ctl(self.d, "start", "--pid", str(p.pid), "--name", name)[0], 0)
        return p

    def start_top(self, *args, width=80, height=24):
        """top in a fresh 80x24 terminal, after a line of its own: the shell
        prints top's exit status and the terminal modes (stty) when it ends."""
        self.err = os.path.join(self.tmp, "top.err")
        self.pidfile = os.path.join(self.tmp, "top.pid")
        self.term.width, self.term.height = width, height
        self.term.start("echo before-top; %s sh -c 'echo $$ > %s; exec %s top %s' 2>%s;"
                        " echo EXIT=$?; stty -a; echo stty-done; sleep 600"
                        % (Terminal.env_line(self.d), self.pidfile, CTL, " ".join(args), self.err))

    def screen(self):
        return self.term.screen()

    def wait_screen(self, pred, what):
        return self.term.wait(pred, what)

    def keys(self, *keys):
        self.term.keys(*keys)

    def rows(self, screen):
        """The job table: {name: [cells]} in screen order."""
        lines = screen.splitlines()
        head = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("ID "))
        out = []
        for ln in lines[head + 1:]:
            cells = ln.split()
            if len(cells) > 3 and cells[0].isdigit():
                out.append((cells[1], cells))
        return lines[head], out

    def cores(self, screen, name):
        return float(dict(self.rows(screen)[1])[name][4])

    def assert_restored(self, screen):
        self.assertIn("before-top", screen)
        self.assertNotIn("CORES", screen, "the view is gone")
        self.assertRegex(screen, r"(^|\s)icanon(\s|$)", "canonical mode is back")
        self.assertRegex(screen, r"(^|\s)echo(\s|$)", "echo is back")
        with open(self.err) as f:
            err = f.read()
        for mark in SANITIZER_MARKS:
            self.assertNotIn(mark, err)
        return err

    def test_jobs_with_figures_keys_resize_and_quit(self):
        self.job("busyjob", ["sh", "-c", "while :; do :; done"])
        self.job("memjob", ["python3", "-c", "import time; b = bytearray(64 << 20); time.sleep(600)"])
        self.start_top()
        # Both with figures, the busy one using more CPU (on a loaded machine
        # the memory job's start-up may outweigh it at first).
        scr = self.wait_screen(lambda s: re.search(r"busyjob +root +R +(0\.0[1-9]|0\.[1-9]|[1-9]\.)", s)
                               and re.search(r"memjob +root +R +0\.0\d +(6\d|7\d)", s)
                               and self.cores(s, "busyjob") > self.cores(s, "memjob"), "both jobs with figures")
        lines = scr.splitlines()
        self.assertEqual(len(lines), 24)
        self.assertTrue(all(len(ln) <= 80 for ln in lines))
        self.assertTrue(lines[0].startswith(socket.gethostname()), lines[0])
        self.assertTrue(any(ln.startswith("CPU  [") for ln in lines), scr)
        self.assertTrue(any(ln.startswith("Mem  [") for ln in lines), scr)
        self.assertTrue(lines[-1].startswith("q quit"), lines[-1])
        head, rows = self.rows(scr)
        self.assertEqual(head.split()[:5], ["ID", "NAME", "USER", "S", "CORESv"])
        self.assertEqual([n for n, _ in rows], ["busyjob", "memjob"])  # by cores, busiest first
        self.assertRegex(" ".join(dict(rows)["memjob"]), r"^\d+ memjob root R 0\.0\d (6\d|7\d)\.?\d* MiB ")
        # m: by memory, the big one first; c: back to cores; r: reversed.
        self.keys("m")
        self.wait_screen(lambda s: [n for n, _ in self.rows(s)[1]] == ["memjob", "busyjob"], "sorted by RSS")
        self.assertIn("RSSv", self.rows(self.screen())[0])
        self.keys("c")
        self.wait_screen(lambda s: [n for n, _ in self.rows(s)[1]] == ["busyjob", "memjob"], "sorted by cores")
        self.keys("r")
        self.wait_screen(lambda s: "CORES^" in s and [n for n, _ in self.rows(s)[1]] == ["memjob", "busyjob"],
                         "reversed")
        self.keys("<")
        self.wait_screen(lambda s: "Sv" in self.rows(s)[0], "the column left of CORES")
        # Help, closed by any key.
        self.keys("h")
        self.wait_screen(lambda s: "resource-trackerctl top: keys" in s, "the help")
        self.keys("x")
        self.wait_screen(lambda s: "top: keys" not in s, "the help closed")
        # A wider terminal shows more columns; back to 80x24 hides them again.
        self.term.resize(110, 30)
        scr = self.wait_screen(lambda s: "PSS" in s and len(s.splitlines()) == 30, "the resized view")
        self.assertTrue(any(len(ln) > 80 for ln in scr.splitlines()))
        self.term.resize(80, 24)
        self.wait_screen(lambda s: "PSS" not in s and "busyjob" in s, "80 columns again")
        # Pause freezes the view (the job's time stops); q quits and gives the terminal back.
        self.keys("p")
        frozen = self.wait_screen(lambda s: "[paused]" in s, "paused")
        time.sleep(1)
        self.assertEqual(self.rows(self.screen())[1], self.rows(frozen)[1])
        self.keys("p")
        self.wait_screen(lambda s: "[paused]" not in s and self.rows(s)[1] != self.rows(frozen)[1], "resumed")
        self.keys("q")
        scr = self.wait_screen(lambda s: "stty-done" in s, "top to end")
        self.assertIn("EXIT=0", scr)
        self.assert_restored(scr)

    def test_sigterm_restores_the_terminal(self):
        self.job("termjob", ["sleep", "600"])
        self.start_top()
        self.wait_screen(lambda s: "termjob" in s, "the job")
        with open(self.pidfile) as f:
            os.kill(int(f.read()), signal.SIGTERM)
        scr = self.wait_screen(lambda s: "stty-done" in s, "top to end")
        self.assertIn("EXIT=0", scr)
        self.assert_restored(scr)

    def test_a_lost_daemon_is_reported_after_the_terminal_is_back(self):
        self.start_top()
        self.wait_screen(lambda s: "CPU  [" in s, "the view")
        self.d.stop()
        self.d.proc = None
        scr = self.wait_screen(lambda s: "stty-done" in s, "top to end")
        self.assertIn("EXIT=3", scr)
        err = self.assert_restored(scr)
        self.assertIn("resource-trackerctl: ", err)

    def run_job(self, name, script):
        """`run -n name -- sh -c script` (a job with its command line), its
        session killed at the end; returns the run process."""
        e = dict(os.environ, RESOURCE_TRACKER_SOCKET=self.d.socket)
        p = subprocess.Popen([CTL, "run", "-q", "-n", name, "--", "sh", "-c", script], env=e,
                             start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: (os.killpg(p.pid, signal.SIGKILL), p.wait()))
        return p

    @staticmethod
    def descendants(pid):
        """The processes below pid, from /proc (every thread's children)."""
        out, todo = [], [pid]
        while todo:
            q = todo.pop()
            try:
                for task in os.listdir("/proc/%d/task" % q):
                    with open("/proc/%d/task/%s/children" % (q, task)) as f:
                        kids = [int(k) for k in f.read().split()]
                    out += kids
                    todo += kids
            except OSError:
                pass
        return sorted(out)

    def test_command_column_filter_and_processes(self):
        run = self.run_job("cmdjob", "sleep 600 & sleep 601; wait")
        self.job("otherjob", ["sleep", "602"])
        # run's child is the shell; below it, the two sleeps.
        procs = wait_for(lambda: len(self.descendants(run.pid)) == 3 and self.descendants(run.pid),
                         what="the job's shell and its two sleeps")
        self.start_top("--sort", "name")
        scr = self.wait_screen(lambda s: "cmdjob" in s and "otherjob" in s, "both jobs")
        head, rows = self.rows(scr)
        self.assertEqual(head.split()[-1], "COMMAND")
        self.assertEqual([n for n, _ in rows], ["cmdjob", "otherjob"])
        # The command it was run with, cut with an ellipsis to the width left.
        line = next(ln for ln in scr.splitlines() if " cmdjob " in ln)
        self.assertLessEqual(len(line), 80)
        self.assertRegex(line[head.index("COMMAND"):], r"^sh -c sleep 600 & .*…$")
        self.assertRegex(next(ln for ln in scr.splitlines() if " otherjob " in ln), r" -$")  # started, not run
        # The filter: only jobs whose name, user or command holds the text.
        self.keys("/", "sleep 60")
        self.wait_screen(lambda s: "filter: sleep 60_" in s.splitlines()[-1], "the filter typed")
        self.keys("Enter")
        scr = self.wait_screen(lambda s: "[filter: sleep 60]" in s.splitlines()[0]
                               and [n for n, _ in self.rows(s)[1]] == ["cmdjob"], "otherjob filtered out")
        self.keys("Escape")
        self.wait_screen(lambda s: "[filter:" not in s and [n for n, _ in self.rows(s)[1]] == ["cmdjob", "otherjob"],
                         "the filter cleared")
        # j selects otherjob, Enter shows its one process; Esc goes back.
        self.keys("j", "Enter")
        scr = self.wait_screen(lambda s: re.search(r"^Job \d+ otherjob: 1 process$", s, re.M), "otherjob's process")
        self.assertIn("PID USER", scr)
        self.keys("Escape")
        self.wait_screen(lambda s: "COMMAND" in s and "otherjob: 1 process" not in s, "the table again")
        # k back to cmdjob: its shell and both sleeps, by their real PIDs.
        self.keys("k", "Enter")
        scr = self.wait_screen(lambda s: re.search(r"^Job \d+ cmdjob: 3 processes$", s, re.M)
                               and re.search(r"sleep 601$", s, re.M), "cmdjob's processes")
        shown = {}
        for ln in scr.splitlines():
            m = re.match(r"^ *(\d+) +root +[RSDZ] +(-|\d+\.\d\d) +\S+ \S+ (.*)$", ln)
            if m:
                shown[int(m.group(1))] = m.group(3)
        self.assertEqual(sorted(shown), procs, scr)
        self.assertEqual(sorted(shown.values()), ["sh -c sleep 600 & sleep 601; wait", "sleep 600", "sleep 601"])
        self.keys("BSpace")
        self.wait_screen(lambda s: "otherjob" in s and "3 processes" not in s, "back with Backspace")
        self.keys("q")
        scr = self.wait_screen(lambda s: "stty-done" in s, "top to end")
        self.assertIn("EXIT=0", scr)
        self.assert_restored(scr)

    def test_a_command_is_escaped(self):
        self.run_job("escjob", "sleep 600 # \x1b[2J\tend")
        out = wait_for(lambda: (lambda o: "escjob" in o and o)(
            run_ctl(self.d, "top", "--iterations", "1", check=0)[1]), what="escjob in top")
        line = next(ln for ln in out.splitlines() if " escjob " in ln)
        self.assertTrue(line.endswith("sh -c sleep 600 # \\x1b[2J\\tend"), line)
        self.assertNotIn("\x1b", out)

    def test_narrow_terminals_keep_the_memory_figures(self):
        with open("/proc/meminfo") as f:
            total_kib = int(re.search(r"^MemTotal: +(\d+) kB", f.read(), re.M).group(1))
        units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
        self.run_job("narrowjob", "sleep 600")
        self.start_top(width=60, height=24)
        for width in (60, 40):
            self.term.resize(width, 24)
            scr = self.wait_screen(lambda s: "narrowjob" in s and max(map(len, s.splitlines())) <= width,
                                   "top at %d columns" % width)
            lines = scr.splitlines()
            mem = next(ln for ln in lines if ln.startswith("Mem"))
            # "Mem  [|||   1.50 GiB/23.5 GiB]" or "Mem  [||  1.50/23.5 GiB]": whole figures.
            m = re.match(r"^Mem  \[[| ]*?(\d+(?:\.\d+)?)(?: (\w+))?/(\d+(?:\.\d+)?) (\w+)\]", mem)
            self.assertTrue(m, scr)
            used, total = float(m.group(1)) * units[m.group(2) or m.group(4)], float(m.group(3)) * units[m.group(4)]
            self.assertAlmostEqual(total / (total_kib << 10), 1, delta=0.01, msg=mem)
            self.assertLess(used, total, mem)
            self.assertTrue(any(re.search(r"(^| )Swap \[[| ]*\d+(\.\d+)?( \w+)?/\d+(\.\d+)? \w+\]", ln)
                                for ln in lines), scr)
            self.assertEqual(self.rows(scr)[1][0][0], "narrowjob")
        self.keys("q")
        scr = self.wait_screen(lambda s: "stty-done" in s, "top to end")
        self.assertIn("EXIT=0", scr)

    def test_plain_lines_when_piped(self):
        users = TestUsers()
        self.addCleanup(users.cleanup)
        alice = users.user("alice")
        self.job("rootjob", ["sleep", "600"])
        p = spawn_as(alice, ["sleep", "600"], start_new_session=True)
        self.addCleanup(lambda: (p.kill(), p.wait()))
        run_ctl(self.d, "start", "--pid", str(p.pid), "--name", "alicejob", user=alice, check=0)
        out = run_ctl(self.d, "top", "--iterations", "3", "--sort", "name", check=0)[1]
        blocks = out.strip("\n").split("\n\n")
        self.assertEqual(len(blocks), 3, out)
        for b in blocks:
            lines = b.splitlines()
            self.assertTrue(lines[0].startswith("resource-trackerd "), lines[0])
            self.assertIn("the jobs of all users", lines[0])
            head = next(ln for ln in lines if ln.lstrip().startswith("ID "))
            self.assertIn("PSS", head)  # every column
            names = [ln.split()[1] for ln in lines[lines.index(head) + 1:]]
            self.assertEqual(names, ["alicejob", "rootjob"])  # --sort name
        mine = run_ctl(self.d, "top", "--iterations", "1", "--mine", check=0)[1]
        self.assertIn("rootjob", mine)
        self.assertNotIn("alicejob", mine)
        hers = run_ctl(self.d, "top", "--iterations", "1", user=alice, check=0)[1]
        self.assertIn("alicejob", hers)
        self.assertNotIn("rootjob", hers)
        for args in (["--iterations", "0"], ["--sort", "bogus"], ["--bogus"], ["extra"]):
            rc, out, err = run_ctl(self.d, "top", *args)
            self.assertEqual((rc, out), (2, ""), args)


class Follow(DaemonTest):
    interval = 0.2

    def follow(self, *args):
        env = dict(os.environ, RESOURCE_TRACKER_SOCKET=self.d.socket)
        p = subprocess.Popen([CTL, "status", "--follow"] + list(args), env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        return p

    def lines(self, p, n):
        out = []
        deadline = time.monotonic() + 30
        while len(out) < n and time.monotonic() < deadline:
            ln = p.stdout.readline()
            if not ln:
                break
            out.append(ln.decode().rstrip("\n"))
        self.assertEqual(len(out), n, "stderr: %s" % (p.poll() is not None and p.stderr.read()))
        return out

    def test_json_lines_are_host_samples_per_interval(self):
        p = self.follow()
        samples = [json.loads(ln) for ln in self.lines(p, 6)]
        for s in samples:
            self.assertEqual(list(s), sorted(s), "keys sorted like the Rust tracker")
            self.assertIsNone(s["tracked_pid"])
            self.assertIsNone(s["job_name"])
            self.assertIsNone(s["cpu"]["process_cores_used"])
            self.assertGreater(s["memory"]["total_mib"], 0)
        # The first is the latest sample; then one per tick, in order.
        for a, b in zip(samples[1:], samples[2:]):
            self.assertLessEqual(a["timestamp_secs"], b["timestamp_secs"])
            self.assertAlmostEqual(b["actual_interval_ms"], 200, delta=150)
        self.assertEqual(len({json.dumps(s, sort_keys=True) for s in samples}), 6, "no sample twice")
        p.terminate()
        p.wait(timeout=10)

    def test_csv_has_the_header_and_host_rows(self):
        p = self.follow("--format", "csv")
        header, *rows = self.lines(p, 5)
        self.assertEqual(header, CSV_HEADER)
        gpu = self.d.call("GetHostSample")["sample"]["cpu"]["process_gpu_usage"] is not None
        for row in rows:
            cols = row.split(",")
            self.assertEqual(len(cols), 32, row)
            self.assertTrue(all(c == "" for c in cols[21:29]), row)  # no process
            self.assertEqual(all(c != "" for c in cols[29:]), gpu, row)  # the host's GPU use, if any
            self.assertRegex(cols[0], r"^\d+\.\d{3}$")  # seconds with milliseconds
            float(cols[4]), int(cols[6])
        p.terminate()
        p.wait(timeout=10)

    def test_text_is_a_line_per_sample_for_people(self):
        p = self.follow("--format", "text")
        head1, head2, *rows = self.lines(p, 6)
        self.assertEqual(head2.split()[:4], ["time", "busy", "user", "sys"])
        self.assertIn("cpu cores", head1)
        line = r"^\d\d:\d\d:\d\d +(\d+\.\d\d) +(\d+\.\d\d|-) +(\d+\.\d\d|-)( +\d+(\.\d)?[BKMGTP]){7}( +\d\.\d\d +\S+)?$"
        for i, row in enumerate(rows):
            m = re.match(line, row)
            self.assertTrue(m, row)
            self.assertLessEqual(len(row), 80)
            if i == 0:  # the stream's first sample: its interval, and so its rates, are not known
                self.assertEqual((m.group(2), m.group(3)), ("-", "-"), row)
                continue
            busy, user, sys_ = (float(m.group(k)) for k in (1, 2, 3))
            self.assertAlmostEqual(busy, user + sys_, delta=0.2 + 0.1 * busy)  # busy is user + system (+ irq)
        self.assertTrue(all(len(ln) <= 80 for ln in (head1, head2)))
        p.terminate()
        p.wait(timeout=10)

    def test_text_header_again_after_a_screenful(self):
        tmp = tempfile.mkdtemp(prefix="rt-vmstat-")
        self.addCleanup(shutil.rmtree, tmp, True)
        os.chmod(tmp, 0o755)
        term = Terminal(self, tmp, width=80, height=8)
        term.start("%s %s status --follow --format text" % (Terminal.env_line(self.d), CTL))
        term.wait(lambda s: len(term.history().splitlines()) >= 14, "two screenfuls")
        lines = term.history().splitlines()
        heads = [i for i, ln in enumerate(lines) if ln.startswith("time ")]
        self.assertGreaterEqual(len(heads), 2, lines)
        self.assertEqual(heads[1] - heads[0], 6 + 2, "a header per screen of 8 lines, as vmstat")

    def test_bad_arguments(self):
        for args in (["status", "--follow", "1"], ["status", "--format", "csv"],
                     ["status", "--follow", "--format", "xml"], ["status", "--follow", "--format"]):
            rc, out, err = run_ctl(self.d, *args)
            self.assertEqual((rc, out), (2, ""), args)
            self.assertTrue(err.startswith("resource-trackerctl: "), err)

    def test_a_stopped_daemon_ends_the_stream(self):
        p = self.follow()
        self.lines(p, 2)
        self.d.stop()
        err = p.communicate(timeout=30)[1]
        self.assertEqual(p.returncode, 3, err)
        self.d.proc = None  # stopped already


if __name__ == "__main__":
    unittest.main(verbosity=2)
