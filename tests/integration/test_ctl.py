"""resource-trackerctl's query verbs against a real daemon and real jobs:
option parsing (--json after the verb, unknown options), the human-readable
output of jobs, info and status, and samples (offset, --follow, CSV)."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import DaemonTest, run_ctl, wait_for  # noqa: E402


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


if __name__ == "__main__":
    unittest.main(verbosity=2)
