"""resource-trackerctl's query verbs against a real daemon and real jobs:
option parsing (--json after the verb, unknown options), the human-readable
output of jobs, info and status, and samples (offset, --follow, CSV)."""

import json
import os
import re
import socket
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import CTL, DaemonTest, read_json_lines, run_ctl, wait_for  # noqa: E402

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
            self.assertEqual([int(ln.split(",")[0]) for ln in lines[1:]],
                             [s["timestamp_secs"] for s in samples[skip:]])
            self.assertTrue(all(len(ln.split(",")) == 32 for ln in lines))

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
        self.assertEqual(head.split(), ["ID", "NAME", "STATE", "EXIT", "PID", "USER", "STARTED", "DURATION", "AVG",
                                        "CPU", "PEAK", "CPU", "PEAK", "MEM", "COMMAND"])
        self.assertEqual(len(rows), 2)
        when = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
        # start knows no command: "-".
        self.assertRegex(rows[0], r"^%-6d tab-two +failed +3 +%d +root +%s +\d+\.\ds +\d+\.\d\d +\d+\.\d\d +\S+ \S+  -$"
                         % (j2, p2.pid, when))
        self.assertRegex(rows[1], r"^%-6d tab-one +running +- +%d +root +%s " % (j1, p1.pid, when))
        running = run_ctl(self.d, "jobs", "--running", check=0)[1].splitlines()[1:]
        self.assertEqual([r.split()[:7] for r in running], [rows[1].split()[:7]])  # the duration grows
        # status JOB: the summary and its last sample.
        out = run_ctl(self.d, "status", "tab-two", check=0)[1]
        self.assertTrue(out.startswith("Job %d (tab-two): failed, exit status 3\n" % j2), out)
        self.assertIn("\nOwner    root, root pid %d\n" % p2.pid, out)
        self.assertRegex(out, r"\nCPU      \d+\.\d\d s in total, \d+\.\d\d cores on average, peak \d+\.\d\d, last \d")

    def test_job_start_and_end_are_logged_once(self):
        p, jid = self.start_job("logged", "sh", "-c", "sleep 0.3")
        p.wait()
        wait_for(lambda: self.d.call("GetJob", {"id": jid})["job"]["state"] == "finished", what="the job's end")
        time.sleep(0.3)  # the main thread logs the end after the sampler saved it
        log = self.d.read_log()
        mine = [ln for ln in log.splitlines() if re.search(r"\b[Jj]ob %d\b" % jid, ln)]
        self.assertEqual(len(mine), 2, "\n".join(mine))
        self.assertIn("Job %d (logged) started for uid 0, root pid %d" % (jid, p.pid), mine[0])
        self.assertIn("Job %d (logged) of uid 0 finished after" % jid, mine[1])


if __name__ == "__main__":
    unittest.main(verbosity=2)
