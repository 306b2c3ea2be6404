"""resource-trackerctl's query verbs against a real daemon and real jobs:
option parsing (--json after the verb, unknown options), the human-readable
output of jobs, info and status, and samples (offset, --follow, CSV); jobs'
columns, filters and formats and status' metadata, with real users."""

import csv
import io
import json
import math
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import (CTL, IFACE, Daemon, DaemonTest, Terminal, UsersTest, VarlinkError, read_json_lines,  # noqa: E402
                   run_ctl, spawn_as, wait_for)

CSV_HEADER_START = "timestamp,system_processes,system_utime,"


class Ctl(DaemonTest):
    interval = 0.2

    def spawn(self, *cmd):
        p = subprocess.Popen(list(cmd))
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        return p

    def start_job(self, name, *cmd):
        p = self.spawn(*cmd)
        rc, out, err = run_ctl(self.d, "start", "--pid", str(p.pid), "--name", name)
        self.assertEqual(rc, 0, err)
        return p, int(out)

    def test_json_before_or_after_the_verb(self):
        p, jid = self.start_job("js", "sleep", "30")
        for verb in (["jobs"], ["status"], ["status", "js"], ["info"]):
            before = run_ctl(self.d, "--json", *verb, check=0)[1]
            after = run_ctl(self.d, *verb, "--json", check=0)[1]
            for out in (before, after):
                json.loads(out)  # one JSON document, not a table
        jobs = json.loads(run_ctl(self.d, "jobs", "--running", "--json", check=0)[1])
        self.assertEqual([j["id"] for j in jobs], [jid])
        self.assertEqual(json.loads(run_ctl(self.d, "status", "--json", str(jid), check=0)[1])["job"]["name"], "js")
        self.assertIn("caller_uid", json.loads(run_ctl(self.d, "info", "--json", check=0)[1]))
        stopped = json.loads(run_ctl(self.d, "stop", "js", "--json", check=0)[1])
        self.assertEqual((stopped["id"], stopped["state"]), (jid, "stopped"))
        p2 = self.spawn("sleep", "30")
        started = json.loads(run_ctl(self.d, "start", "--pid", str(p2.pid), "--json", check=0)[1])
        self.assertEqual((started["pid"], started["state"]), (p2.pid, "running"))

    def test_unknown_options_are_errors_not_job_names(self):
        self.start_job("opt", "sleep", "30")
        for args in (["status", "--bogus"], ["status", "-x", "opt"], ["stop", "--bogus"], ["stop", "-j", "opt"],
                     ["jobs", "--bogus"], ["info", "--bogus"], ["info", "extra"], ["status", "a", "b"],
                     ["samples", "opt", "--bogus"], ["start", "--bogus"]):
            rc, out, err = run_ctl(self.d, *args)
            self.assertEqual(rc, 2, "%s: %s" % (args, err))
            self.assertEqual(out, "", args)
            self.assertNotIn("no such job", err, args)
            self.assertTrue("unknown option" in err or "unexpected argument" in err, "%s: %s" % (args, err))
        # The job is still running: no option was taken for its name.
        self.assertEqual(json.loads(run_ctl(self.d, "status", "opt", "--json", check=0)[1])["job"]["state"],
                         "running")
        # "--" ends the options: a job name may start with '-'.
        rc, _, err = run_ctl(self.d, "status", "--", "-nope")
        self.assertEqual(rc, 5, err)
        self.assertIn("no such job: -nope", err)
        for verb in ("jobs", "status", "stop", "info", "samples", "start"):
            rc, out, _ = run_ctl(self.d, verb, "--help")
            self.assertEqual(rc, 0, verb)
            self.assertTrue(out.startswith("Usage: resource-trackerctl " + verb), out)

    def all_samples(self, jid):
        return self.d.call("GetJobSamples", {"id": jid, "limit": 10000})["samples"]

    def follow(self, *args):
        env = dict(os.environ, RESOURCE_TRACKER_SOCKET=self.d.socket)
        p = subprocess.Popen([CTL, "samples"] + list(args), env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        return p

    def test_samples_follow_until_the_job_ends(self):
        p, jid = self.start_job("fol", "sh", "-c", "sleep 1.2")
        fj = self.follow("fol", "--follow")
        fc = self.follow(str(jid), "--follow", "--format", "csv")
        fo = self.follow("fol", "-F", "-f", "csv", "--offset", "2")
        outs = []
        for f in (fj, fc, fo):
            out, err = f.communicate(timeout=30)  # they end with the job
            self.assertEqual((f.returncode, err), (0, b""))
            outs.append(out.decode())
        p.wait()
        job = self.d.call("GetJob", {"id": jid})["job"]
        self.assertEqual(job["state"], "finished")
        samples = self.all_samples(jid)
        self.assertGreaterEqual(len(samples), 5)
        self.assertEqual(read_json_lines(outs[0]), samples)
        for text, skip in ((outs[1], 0), (outs[2], 2)):
            lines = text.splitlines()
            self.assertTrue(lines[0].startswith(CSV_HEADER_START), lines[0])
            self.assertEqual(sum(ln.startswith("timestamp,") for ln in lines), 1, "one header")
            self.assertEqual([ln.split(",")[0] for ln in lines[1:]],
                             ["%d.%03d" % divmod(s["timestamp_ms"], 1000) for s in samples[skip:]])
            self.assertTrue(all(len(ln.split(",")) == 32 for ln in lines))

    def test_a_final_sample_does_not_repeat_the_hosts_cpu_time(self):
        """A job's final sample, taken when it ends between ticks, carries the
        last tick's host part: its JSON says when that was taken, and its CSV
        row leaves the host's CPU seconds, already on the row before, empty,
        so a sum over the rows counts them once; live, stored and from a page
        that starts at that row alike."""
        p, jid = self.start_job("fin", "sh", "-c", "sleep 1.3")
        live = self.follow(str(jid), "--follow", "--format", "csv")
        out, err = live.communicate(timeout=30)
        self.assertEqual((live.returncode, err), (0, b""))
        samples = self.all_samples(jid)
        n = len(samples)
        self.assertGreaterEqual(n, 4)
        *ticks, final = samples
        self.assertTrue(all(s["host_timestamp_ms"] == s["timestamp_ms"] for s in ticks), ticks)
        self.assertEqual(final["host_timestamp_ms"], ticks[-1]["host_timestamp_ms"])
        self.assertLess(final["host_timestamp_ms"], final["timestamp_ms"])
        stored = run_ctl(self.d, "samples", "fin", "--format", "csv", check=0)[1]
        page = run_ctl(self.d, "samples", "fin", "--format", "csv", "--offset", str(n - 1), check=0)[1]
        self.assertEqual(out.decode(), stored)
        rows = list(csv.DictReader(io.StringIO(stored)))
        self.assertEqual(page.splitlines()[1:], stored.splitlines()[-1:])
        self.assertEqual(len(rows), n)
        for row in rows[:-1]:
            float(row["system_utime"]), float(row["system_stime"])  # numbers
        self.assertEqual((rows[-1]["system_utime"], rows[-1]["system_stime"]), ("", ""))
        self.assertNotEqual(rows[-1]["system_memory_used_mib"], "")  # levels stay
        self.assertEqual(rows[-1]["process_pid"], str(p.pid))

    def test_samples_csv_from_an_offset_has_the_header(self):
        p, jid = self.start_job("off", "sleep", "30")
        wait_for(lambda: self.d.call("GetJob", {"id": jid})["job"]["summary"]["samples"] >= 4, what="samples")
        run_ctl(self.d, "stop", "off", check=0)
        total = self.d.call("GetJob", {"id": jid})["job"]["summary"]["samples"]
        whole = run_ctl(self.d, "samples", "off", "--format", "csv", check=0)[1].splitlines()
        self.assertEqual(len(whole), total + 1)
        for offset in (1, 3, total, total + 5):
            lines = run_ctl(self.d, "samples", "off", "--format=csv", "--offset", str(offset), check=0)[1].splitlines()
            self.assertEqual(lines, [whole[0]] + whole[1 + offset:], offset)
        self.assertEqual(read_json_lines(run_ctl(self.d, "samples", "off", "--offset", "2", check=0)[1]),
                         self.all_samples(jid)[2:])

    def test_info_and_jobs_tables(self):
        info = self.d.call("Info")
        rc, out, err = run_ctl(self.d, "info")
        self.assertEqual((rc, err), (0, ""))
        lines = out.splitlines()
        self.assertEqual(lines[0], "Daemon     resource-trackerd %s on %s" % (info["version"], socket.gethostname()))
        self.assertEqual(lines[1], "Socket     " + self.d.socket)
        self.assertRegex(lines[2], r"^Uptime     \d+\.\ds, sampling every 0\.2s$")
        self.assertEqual(lines[3:], ["Jobs       0 running", "GPUs       %d" % info["gpus"],
                                     "You        root (administrator: all jobs)"])
        p1, j1 = self.start_job("tab-one", "sleep", "30")
        p2, j2 = self.start_job("tab-two", "sh", "-c", "sleep 0.5; exit 3")
        # Not reaped until the daemon has seen it end: the zombie tells its status.
        wait_for(lambda: self.d.call("GetJob", {"id": j2})["job"]["state"] != "running", what="the job's end")
        p2.wait()
        self.assertIn("Jobs       1 running", run_ctl(self.d, "info", check=0)[1].splitlines())
        rc, out, err = run_ctl(self.d, "jobs")
        self.assertEqual((rc, err), (0, ""))
        head, *rows = out.splitlines()
        # One user's jobs, in a pipe: the default columns (no USER), the command whole.
        self.assertEqual(head.split(), ["ID", "NAME", "STATE", "EXIT", "STARTED", "DURATION", "CPU", "MEMORY",
                                        "COMMAND"])
        self.assertEqual(len(rows), 2)
        when = r"\d\d-\d\d \d\d:\d\d"
        # start knows no command: "-".
        self.assertRegex(rows[0], r"^ *%d tab-two +failed +3 +%s +\d+\.\ds +\d+\.\d\d +\S+ \S+ -$" % (j2, when))
        self.assertRegex(rows[1], r"^ *%d tab-one +running +- +%s " % (j1, when))
        running = run_ctl(self.d, "jobs", "--running", check=0)[1].splitlines()[1:]
        self.assertEqual([r.split()[:4] for r in running], [rows[1].split()[:4]])  # the duration grows
        # --long: every column; the full time.
        head, *rows = run_ctl(self.d, "jobs", "--long", check=0)[1].splitlines()
        self.assertEqual(head.split(), ["ID", "NAME", "STATE", "EXIT", "PID", "USER", "STARTED", "DURATION", "CPU",
                                        "PEAK", "CPU", "MEMORY", "PEAK", "RSS", "EFF", "C/M/G%", "COMMAND"])
        self.assertRegex(rows[0], r"^ *%d tab-two +failed +3 +%d root +%s " % (j2, p2.pid, when))
        # status JOB: the summary and its last sample.
        out = run_ctl(self.d, "status", "tab-two", check=0)[1]
        self.assertTrue(out.startswith("Job %d (tab-two): failed, exit status 3\n" % j2), out)
        self.assertIn("\nOwner    root, root pid %d\n" % p2.pid, out)
        self.assertRegex(out, r"\nCPU      \d+\.\d\d s in total, \d+\.\d\d cores on average, peak \d+\.\d\d, last \d")

    def test_one_spelling_of_an_end(self):
        rc, _, err = run_ctl(self.d, "run", "-s", "-n", "killed", "--", "sh", "-c", "kill -9 $$")
        self.assertEqual(rc, 137)
        jid = self.d.call("GetJob", {"name": "killed"})["job"]["id"]
        self.assertRegex(err, r"^Job %d \(killed\) failed after \d+\.\ds: killed by SIGKILL\n" % jid)
        self.assertTrue(run_ctl(self.d, "status", "killed", check=0)[1].startswith(
            "Job %d (killed): failed, killed by SIGKILL\n" % jid))
        self.assertEqual(run_ctl(self.d, "jobs", "-o", "id,exit", check=0)[1].splitlines()[1].split(),
                         [str(jid), "SIGKILL"])
        self.assertIn("<th>End</th><td>killed by SIGKILL</td>",
                      run_ctl(self.d, "report", "-o", "-", "--no-prices", "killed", check=0)[1])
        # An exit status and a running job, the same way.
        run_ctl(self.d, "run", "-q", "-n", "three", "--", "sh", "-c", "exit 3")
        self.assertIn("Job %d (three): failed, exit status 3\n" % (jid + 1), run_ctl(self.d, "status", "three",
                                                                                  check=0)[1])
        p, j = self.start_job("live", "sleep", "30")
        self.assertTrue(run_ctl(self.d, "status", str(j), check=0)[1].startswith(
            "Job %d (live): running\n" % j))

    def test_job_start_and_end_are_logged_once(self):
        p, jid = self.start_job("logged", "sh", "-c", "sleep 0.3")
        # Not reaped until the daemon has seen it end: the zombie tells its status.
        wait_for(lambda: self.d.call("GetJob", {"id": jid})["job"]["state"] == "finished", what="the job's end")
        p.wait()
        time.sleep(0.3)  # the main thread logs the end after the sampler saved it
        log = self.d.read_log()
        mine = [ln for ln in log.splitlines() if re.search(r"\b[Jj]ob %d\b" % jid, ln)]
        self.assertEqual(len(mine), 2, "\n".join(mine))
        self.assertIn("Job %d (logged) started for root (uid 0), root pid %d" % (jid, p.pid), mine[0])
        self.assertIn("Job %d (logged) of root (uid 0) finished after" % jid, mine[1])


class JobsAtATerminal(DaemonTest):
    """jobs as a person reads it in an 80x24 terminal (tmux): one line per job."""

    def test_fits_80_columns(self):
        tmp = tempfile.mkdtemp(prefix="rt-jobs-")
        self.addCleanup(shutil.rmtree, tmp, True)
        os.chmod(tmp, 0o755)
        term = Terminal(self, tmp)
        for name, cmd in (("train run", ["python3", "-c", "import sys; sys.exit(0)", "--epochs=10", "--lr=0.001"]),
                          ("preprocess-the-whole-dataset", ["sh", "-c", "kill -9 $$"]), ("quick", ["true"])):
            run_ctl(self.d, "run", "-q", "-n", name, "--", *cmd)
        term.start("%s %s jobs; echo DONE; sleep 600" % (Terminal.env_line(self.d), CTL))
        screen = term.wait(lambda s: "DONE" in s, "the table")
        lines = screen.splitlines()
        done = lines.index("DONE")
        self.assertEqual(done, 4, "a header and a line per job, none wrapped:\n" + screen)
        self.assertTrue(all(len(ln) <= 80 for ln in lines))
        head = lines[0]
        self.assertEqual(head.split()[-1], "COMMAND")
        rows = {ln.split()[0]: ln for ln in lines[1:done]}
        self.assertEqual(len(rows), 3)
        at = head.index("COMMAND")
        commands = sorted(r[at:] for r in rows.values())
        self.assertEqual(commands[0], "python3 -c import sys; sys.exit(0) --epochs=10 --lr=0.001"[:79 - at] + "…")
        self.assertIn("true", commands)
        self.assertIn("SIGKILL", screen)


class JobsAndUsers(UsersTest):
    """jobs' filters as a user, an administrator (by group) and root; its
    columns, cells and CSV; status JOB's metadata and tags."""

    @classmethod
    def add_users(cls):
        cls.users.group("adm")
        adm_group = cls.users.groups[-1]
        cls.alice = cls.users.user("alice")
        cls.bob = cls.users.user("bob")
        cls.adm = cls.users.user("adm", groups=[adm_group])
        cls.uid = {u: pwd.getpwnam(u).pw_uid for u in (cls.alice, cls.bob, cls.adm)}
        cls.admin_args = ["--admin-group", adm_group]

    def setUp(self):
        self.d = Daemon(interval=0.2, args=self.admin_args).start()
        self.addCleanup(self.d.cleanup)
        self.addCleanup(self.d.stop)

    def ctl(self, *args, user=None, env=None, check=0):
        return run_ctl(self.d, *args, user=user, env=env, check=check)[1]

    def ids(self, *args, user=None):
        return [j["id"] for j in json.loads(self.ctl("jobs", "--json", *args, user=user))]

    def run_job(self, user, name, *cmd, opts=(), rc=0):
        self.assertEqual(run_ctl(self.d, "run", "-q", "-n", name, *opts, "--", *cmd, user=user)[0], rc)
        return self.d.call("ListJobs", {"name": name, "limit": 1})["jobs"][0]["id"]

    def start_job(self, user, name):
        p = spawn_as(user, ["sleep", "60"])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        wait_for(lambda: os.stat("/proc/%d" % p.pid).st_uid == self.uid[user], what="the process of " + user)
        return int(self.ctl("start", "--pid", str(p.pid), "--name", name, user=user))

    def test_filters(self):
        a1 = self.run_job(self.alice, "train", "true")
        b1 = self.run_job(self.bob, "train", "true")
        middle = time.time()
        time.sleep(1.2)
        a2 = self.run_job(self.alice, "train", "true")
        a3 = self.start_job(self.alice, "eval")
        b2 = self.start_job(self.bob, "other")
        mine = self.ids("--user", self.alice, user=self.alice)
        self.assertEqual(mine, [a3, a2, a1])
        self.assertEqual(self.ids(user=self.alice), mine)
        self.assertEqual(self.ids("-u", str(self.uid[self.alice]), user=self.alice), mine)
        self.assertEqual(self.ids("--name", "train", user=self.alice), [a2, a1])
        self.assertEqual(self.ids("--running", user=self.alice), [a3])
        for other in (self.bob, "root", str(self.uid[self.bob])):
            rc, out, err = run_ctl(self.d, "jobs", "--user", other, user=self.alice)
            self.assertEqual((rc, out, err), (4, "", "resource-trackerctl: permission denied: --user %s: only "
                                                     "administrators list other users' jobs\n" % other))
        # An administrator (by group) and root name anyone.
        for admin in (self.adm, None):
            self.assertEqual(self.ids("--user", self.bob, user=admin), [b2, b1])
            self.assertEqual(self.ids("--name", "train", user=admin), [a2, b1, a1])
            self.assertEqual(self.ids("--name", "train", "--user", self.bob, user=admin), [b1])
            self.assertEqual(self.ids("--user", self.alice, "--running", user=admin), [a3])
        self.assertEqual(self.ids("--user", self.adm, user=self.adm), [])
        # --limit: the newest N; with the other filters.
        self.assertEqual(self.ids("--limit", "2"), [b2, a3])
        self.assertEqual(self.ids("-l", "1", "--name", "train"), [a2])
        self.assertEqual(self.ids("--limit", "1000"), [b2, a3, a2, b1, a1])
        # --since: started since a point in time or a duration ago.
        later = [b2, a3, a2]
        stamp = math.ceil(middle)
        local = time.localtime(stamp)
        for since in ("@%d" % stamp, time.strftime("%Y-%m-%d %H:%M:%S", local),
                      time.strftime("%Y-%m-%dT%H:%M:%S", local)):
            self.assertEqual(self.ids("--since", since), later, since)
        if time.strftime("%Y-%m-%d", local) == time.strftime("%Y-%m-%d"):
            self.assertEqual(self.ids("--since", time.strftime("%H:%M:%S", local)), later)
        for since in ("1h", "90m", "1h30m", "1d", "1w", "yesterday", time.strftime("%Y-%m-%d", time.localtime(
                time.time() - 86400))):
            self.assertEqual(self.ids("--since", since), later + [b1, a1], since)
        self.assertEqual(self.ids("--since", "2099-01-01"), [])
        self.assertEqual(self.ctl("jobs", "--since", "2099-01-01").splitlines()[1:], [])

    def test_limit_across_pages(self):
        # Jobs of ~60 KiB each (metadata near its limit): the daemon pages
        # ListJobs at about 1 MiB, so the client asks again for what --limit
        # still wants.
        big = {"project_name": "p" * 4096, "tags": ["t=" + "x" * 4000] * 14}
        ids = []
        for _ in range(24):
            p = subprocess.Popen(["sleep", "60"])
            self.addCleanup(lambda p=p: (p.kill(), p.wait()))
            ids.append(self.d.call("StartJob", {"pid": p.pid, "metadata": big})["job"]["id"])
        page = self.d.call("ListJobs")
        self.assertLess(len(page["jobs"]), 24, "a page holds fewer")
        self.assertGreater(len(page["jobs"]), 12)
        self.assertEqual(self.ids(), ids[::-1])
        self.assertEqual(self.ids("--limit", "20"), ids[:-21:-1])
        rows = self.ctl("jobs", "--running", "--limit", "22", "--format", "csv").splitlines()
        self.assertEqual([int(r.split(",")[0]) for r in rows[1:]], ids[:-23:-1])

    def test_columns_cells_and_csv(self):
        long_name = "a-very-long-job-name-of-31-char"
        j1 = self.run_job(self.alice, long_name, "sh", "-c", "exit 7", rc=7)
        j2 = self.run_job(self.alice, "killed", "sh", "-c", "kill -KILL $$", rc=137)
        words = "ünïcödé €uro 漢字 \x1b[31mred\n: line"
        j3 = self.run_job(self.alice, "utf", "sh", "-c", ": " + words + ", \"quoted\"")
        j4 = self.start_job(self.alice, "running")
        columns = ("-o", "id,name,state,exit,user,command")
        head, *rows = self.ctl("jobs", *columns, user=self.alice).splitlines()
        self.assertEqual(head.split(), ["ID", "NAME", "STATE", "EXIT", "USER", "COMMAND"])
        fixed = head.index("COMMAND")
        user_cell = self.alice[:11] + "…" if len(self.alice) > 12 else self.alice
        self.assertEqual(len(rows), 4)
        by_id = {int(r.split()[0]): r for r in rows}

        def cells(row):
            return [c for c in re.split(r" {1,}", row[:fixed].strip())]
        self.assertEqual(cells(by_id[j1])[1:5], [long_name[:23] + "…", "failed", "7", user_cell])
        self.assertEqual(cells(by_id[j2])[1:4], ["killed", "failed", "SIGKILL"])
        self.assertEqual(cells(by_id[j4])[1:4], ["running", "running", "-"])
        self.assertEqual(by_id[j1][fixed:], "sh -c exit 7")
        self.assertEqual(by_id[j4][fixed:], "-")
        # The command whole in a pipe, control characters escaped as systemd shows them.
        shown = "sh -c : " + words.replace("\x1b", "\\x1b").replace("\n", "\\n") + ", \"quoted\""
        self.assertEqual(by_id[j3][fixed:], shown)
        # Cut to $COLUMNS at any character: never inside a UTF-8 sequence or an escape.
        pieces = re.findall(r"\\x[0-9a-f]{2}|\\.|.", shown)
        fixed = self.ctl("jobs", "--name", "utf", *columns).splitlines()[0].index("COMMAND")  # a narrower NAME
        for width in range(fixed + 12, fixed + len(shown) + 2):
            p = subprocess.run([CTL, "jobs", "--name", "utf", *columns], capture_output=True, timeout=30,
                               env=dict(os.environ, RESOURCE_TRACKER_SOCKET=self.d.socket, COLUMNS=str(width)))
            row = p.stdout.decode("utf-8").splitlines()[1]  # strict: a cut sequence raises
            want = shown
            if len(shown) > width - fixed:
                want = ""
                for piece in pieces:
                    if len(want) + len(piece) > width - fixed - 1:
                        break
                    want += piece
                want += "…"
            self.assertEqual(row[fixed:], want, width)
        self.assertEqual(len(self.ctl("jobs", "--name", "utf", *columns, env={"COLUMNS": str(fixed + 3)})
                             .splitlines()[1]), fixed + 12, "12 characters at least")
        # The default columns fit the width: the least needed go first, as
        # few as needed, the command keeps 12; the narrower, the more go.
        columns = ["ID", "NAME", "STATE", "EXIT", "STARTED", "DURATION", "CPU", "MEMORY", "COMMAND"]
        order = ["STARTED", "EXIT", "CPU", "DURATION", "MEMORY"]
        dropped = 0
        for width in (200, 90, 80, 70, 60, 50):
            out = self.ctl("jobs", user=self.alice, env={"COLUMNS": str(width)}).splitlines()
            head = out[0].split()
            gone = [c for c in order if c not in head]
            self.assertEqual(gone, order[:len(gone)], width)  # as a set: the first ones of the order
            self.assertEqual(head, [c for c in columns if c not in gone], width)
            self.assertGreaterEqual(len(gone), dropped, width)
            dropped = len(gone)
            self.assertTrue(all(len(ln) <= width for ln in out), out)
            self.assertLessEqual(out[0].index("COMMAND"), width - 12)
            if gone:  # with the last one dropped, the command would not have its 12
                kept = ",".join(c.lower() for c in columns if c not in gone[:-1])
                head = self.ctl("jobs", "-o", kept, user=self.alice, env={"COLUMNS": str(width)}).splitlines()[0]
                self.assertGreater(head.index("COMMAND"), width - 12, width)
        self.assertGreaterEqual(dropped, 3)
        # USER where the jobs are more than one user's.
        self.run_job(self.bob, "bobs", "true")
        self.assertIn("USER", self.ctl("jobs").splitlines()[0].split())
        self.assertNotIn("USER", self.ctl("jobs", "--user", self.bob).splitlines()[0].split())
        for args in (["--long", "--json"], ["-o", "id", "--format", "csv"], ["-o", "id,bogus"], ["-o", ""]):
            self.assertEqual(run_ctl(self.d, "jobs", *args)[0], 2, args)
        # CSV: RFC 4180, the same jobs as JSON.
        table = list(csv.DictReader(io.StringIO(self.ctl("jobs", "--format", "csv", user=self.alice))))
        docs = json.loads(self.ctl("jobs", "--json", user=self.alice))
        self.assertEqual([int(r["id"]) for r in table], [j["id"] for j in docs])
        rows = {int(r["id"]): r for r in table}
        self.assertEqual(rows[j3]["command"],
                         "sh -c : " + words.replace("\x1b", "\\x1b").replace("\n", "\\n") + ", \"quoted\"")
        self.assertEqual((rows[j1]["exit_code"], rows[j1]["signal"], rows[j1]["name"]), ("7", "", long_name))
        self.assertEqual((rows[j2]["exit_code"], rows[j2]["signal"]), ("137", "9"))
        self.assertEqual((rows[j4]["state"], rows[j4]["exit_code"], rows[j4]["ended_at"], rows[j4]["command"]),
                         ("running", "", "", ""))
        self.assertEqual({r["user"] for r in table}, {self.alice})
        self.assertEqual({r["owner_uid"] for r in table}, {str(self.uid[self.alice])})
        for j in docs:
            self.assertAlmostEqual(float(rows[j["id"]]["started_at"]), j["started_at"], places=3)

    def test_no_raw_control_characters_anywhere(self):
        # A user's command line and metadata with OSC 52 (set the clipboard),
        # OSC 0 (the title), a C1 CSI and a line break: whatever an
        # administrator prints of the job, none of it reaches the terminal
        # raw (control characters escaped as systemd shows them: \n, \a, \x1b).
        osc52 = "\x1b]52;c;ZXZpbA==\x07"
        evil = osc52 + "\x1b]0;pwned\x07\u009b31m\x7f\nnext"
        self.run_job(self.alice, "ctrl", "sh", "-c", ": '%s'" % evil, opts=("--project-name", evil, "--tag", "t=" + evil))
        jid = self.d.call("ListJobs", {"name": "ctrl", "limit": 1})["jobs"][0]["id"]
        raw = re.compile("[\x00-\x09\x0b-\x1f\x7f\x80-\x9f]")  # every control but the lines' own \n
        outputs = {}
        for args in (["jobs"], ["jobs", "--format", "csv"], ["jobs", "--json"], ["status", str(jid)],
                     ["status", "--json", str(jid)], ["recommend", str(jid)], ["report", "-o", "-", str(jid),
                                                                               "--no-prices"]):
            rc, out, err = run_ctl(self.d, *args)
            self.assertEqual(rc, 0, (args, err))
            outputs[" ".join(args[:3])] = out + err
        for what, out in outputs.items():
            self.assertIsNone(raw.search(out), "%s: %r" % (what, raw.search(out) and out[raw.search(out).start() - 20:][:60]))
        rows = list(csv.DictReader(io.StringIO(outputs["jobs --format csv"])))
        self.assertEqual([r["command"] for r in rows if int(r["id"]) == jid],
                         ["sh -c : '\\x1b]52;c;ZXZpbA==\\a\\x1b]0;pwned\\a\\xc2\\x9b31m\\x7f\\nnext'"])
        self.assertEqual(len(outputs["jobs --format csv"].splitlines()), 1 + len(rows), "one line a job")
        md = json.loads(outputs["status --json " + str(jid)])["job"]["metadata"]
        self.assertEqual((md["project_name"], md["tags"]), (evil, ["t=" + evil]), "JSON keeps the text, escaped")
        self.assertIn("\\u009b31m\\u007f", outputs["status --json " + str(jid)])
        self.assertIn("\\x1b]52;c;ZXZpbA==\\a", outputs["report -o -"])
        self.assertNotIn("\x1b", self.d.read_log())
    def test_the_log_names_the_owner(self):
        jid = self.run_job(self.alice, "hers", "true")
        wait_for(lambda: "Job %d (hers) of %s (uid %d) finished after" % (jid, self.alice, self.uid[self.alice])
                 in self.d.read_log(), what="the job's record")
        self.assertIn("Job %d (hers) started for %s (uid %d)" % (jid, self.alice, self.uid[self.alice]),
                      self.d.read_log())

    def test_a_process_is_one_jobs_at_a_time(self):
        j1 = self.start_job(self.alice, "first")
        pid = self.d.call("GetJob", {"id": j1})["job"]["pid"]
        rc, out, err = run_ctl(self.d, "start", "--pid", str(pid), "--name", "again", user=self.alice)
        self.assertEqual((rc, out, err), (1, "", "resource-trackerctl: already tracked, by job %d: a process tree or "
                                                 "cgroup is one job's at a time (stop job %d to track it anew)\n"
                                                 % (j1, j1)))
        # An administrator's job on her process: she is not told which.
        run_ctl(self.d, "stop", str(j1), user=self.alice, check=0)
        j2 = int(self.ctl("start", "--pid", str(pid), "--name", "admins"))
        rc, _, err = run_ctl(self.d, "start", "--pid", str(pid), user=self.alice)
        self.assertEqual((rc, err), (1, "resource-trackerctl: already tracked, by a job of another user: a process "
                                        "tree or cgroup is one job's at a time\n"))
        with self.assertRaises(VarlinkError) as e:
            self.d.call("StartJob", {"pid": pid})
        self.assertEqual((e.exception.error, e.exception.parameters), (IFACE + ".AlreadyTracked", {"id": j2}))
        self.assertEqual([j["name"] for j in json.loads(self.ctl("jobs", "--json", "--running"))], ["admins"])
        # Once it is stopped, the process may be tracked anew.
        run_ctl(self.d, "stop", str(j2), check=0)
        self.assertGreater(int(self.ctl("start", "--pid", str(pid), user=self.alice)), j2)
        # PID 1 is the host: refused, saying where the host is.
        rc, out, err = run_ctl(self.d, "start", "--pid", "1")
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("start: --pid 1: PID 1 is init, whose tree is every process: the host, which "
                      "'resource-trackerctl status' shows", err)
        with self.assertRaises(VarlinkError) as e:
            self.d.call("StartJob", {"pid": 1})
        self.assertEqual((e.exception.error, e.exception.parameters),
                         ("org.varlink.service.InvalidParameter", {"parameter": "pid"}))

    def test_status_shows_metadata_and_tags(self):
        self.run_job(self.alice, "meta", "true", opts=("--project-name", "proj", "--team", "ml", "--tag", "a=1",
                                                       "--tag", "b=x=y", "--executor", "\x1b]0;title\x07"))
        out = self.ctl("status", "meta", user=self.alice)
        lines = out.splitlines()
        start = lines.index("Command  true")
        self.assertEqual(lines[start + 1:start + 6], [
            "Metadata project_name     proj",
            "         team             ml",
            "         executor         \\x1b]0;title\\a",
            "Tags     a=1",
            "         b=x=y",
        ])
        self.assertTrue(lines[start + 6].startswith("CPU "), out)
        md = json.loads(self.ctl("status", "meta", "--json", user=self.alice))["job"]["metadata"]
        self.assertEqual((md["tags"], md["executor"]), (["a=1", "b=x=y"], "\x1b]0;title\x07"))
        # TRACKER_* variables show the same way; a job without metadata has no such lines.
        self.assertEqual(run_ctl(self.d, "run", "-q", "-n", "envmeta", "--", "true", user=self.alice,
                                 env={"TRACKER_ENV": "prod"})[0], 0)
        self.assertIn("\nMetadata env              prod\nCPU ", self.ctl("status", "envmeta", user=self.alice))
        self.run_job(self.alice, "nometa", "true")
        out = self.ctl("status", "nometa", user=self.alice)
        self.assertNotIn("Metadata", out)
        self.assertNotIn("Tags", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
