"""`resource-trackerctl run` survives a daemon restart (SIGTERM, as systemctl
restart does, and SIGKILL): the client reconnects, its --output gets every
sample exactly once, and the command's exit status reaches the daemon and
the Sentinel API stand-in, also when the command ends while no daemon runs."""

import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.environ.get("RT_SOURCE_DIR", "."), "tests", "upload"))
from rtlib import (CTL, Daemon, VarlinkError, job_samples, read_json_lines, split_summary,  # noqa: E402
                   wait_for)
from standin import SentinelStandin  # noqa: E402

TOKEN = "tok-restart-7"


class RunSurvivesRestart(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-restart-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.tmp]))
        # No bucket: the rows go inline with /finish, where the test reads them.
        self.api = SentinelStandin(TOKEN, None, [("AK", "SK")])
        self.addCleanup(self.api.close)
        self.d = self.daemon()

    def tearDown(self):
        self.assertEqual(self.d.stop(), 0)

    def daemon(self, like=None):
        d = Daemon(interval=0.2)
        if like:  # the same socket and state: a restart
            d.socket, d.state_dir = like.socket, like.state_dir
        self.addCleanup(d.cleanup)
        return d.start()

    def path(self, name):
        return os.path.join(self.tmp, name)

    def run_client(self, name, out, fmt, gate):
        env = dict(os.environ, RESOURCE_TRACKER_SOCKET=self.d.socket, SENTINEL_API_TOKEN=TOKEN,
                   SENTINEL_API_URL=self.api.url, TRACKER_UPLOAD_INTERVAL="1")
        script = "while [ ! -e %s ]; do sleep 0.05; done; exit 3" % gate
        p = subprocess.Popen([CTL, "run", "-n", name, "-o", out, "--format", fmt, "--", "sh", "-c", script],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.communicate()))
        return p

    def samples(self, d, name):
        try:
            return d.call("GetJob", {"name": name})["job"]["summary"]["samples"]
        except VarlinkError:
            return 0  # not registered yet

    def restart(self, how, name, gate=None):
        """Stop the daemon while the job runs, (optionally let the command
        end meanwhile), start it again on the same socket and state."""
        wait_for(lambda: self.samples(self.d, name) >= 5, what="samples before the restart")
        if how == "kill":
            self.d.kill9()
            self.d.check_log_clean()
        else:
            self.assertEqual(self.d.stop(), 0)
        if gate:
            open(gate, "w").close()
        time.sleep(0.7)  # samples not taken: a gap in time, not in the sequence
        self.d = self.daemon(like=self.d)

    def check(self, p, name, out, fmt):
        _, err = p.communicate(timeout=60)
        err = err.decode()
        self.assertEqual(p.returncode, 3, err)
        self.assertIn("lost the daemon", err)
        self.assertIn("reconnected after", err)
        self.assertRegex(split_summary(err)[1] or "", r"^Job \d+ \(%s\) failed after .*: exit status 3\n" % name)
        job = self.d.call("GetJob", {"name": name})["job"]
        self.assertEqual((job["state"], job["exit_code"]), ("failed", 3))
        stored = job_samples(self.d, job["id"], fmt=fmt)
        with open(out) as f:
            printed = f.read()
        if fmt == "json":
            self.assertEqual(read_json_lines(printed), stored, "--output must hold every sample once")
            stamps = [s["timestamp_ms"] for s in stored]
        else:
            self.assertEqual(printed, stored, "--output must hold the header once and every row once")
            stamps = [ln.split(",")[0] for ln in stored.splitlines()[1:]]
        self.assertEqual(len(stamps), len(set(stamps)), "two samples share a timestamp")
        rows = stored.splitlines()[1:] if fmt == "csv" else None
        fin = wait_for(lambda: self.api.finishes(), timeout=60, what="the upload's /finish")
        [(run_id, [f])] = fin.items()
        self.assertEqual((f["exit_code"], f["run_status"]), (3, "failed"))
        if rows is not None:
            self.assertEqual(f["data_csv"].splitlines()[1:], rows, "the upload has every row once")
        self.assertEqual(self.api.violations, [])
        return job

    def restart_while_running(self, how, fmt):
        gate, out = self.path("go"), self.path("out." + fmt)
        p = self.run_client(how, out, fmt, gate)
        self.restart(how, how)
        before = self.samples(self.d, how)
        wait_for(lambda: self.samples(self.d, how) >= before + 5, what="samples after the restart")
        open(gate, "w").close()
        self.check(p, how, out, fmt)

    def test_sigterm_while_running(self):
        self.restart_while_running("term", "csv")

    def test_sigkill_while_running(self):
        self.restart_while_running("kill", "json")

    def test_command_ends_while_no_daemon_runs(self):
        # The client holds the exited command as a zombie until a daemon takes
        # its status: never "lost" with an exit code of 0.
        for how in ("kill", "term"):
            self.api.runs.clear()
            gate, out = self.path("go-" + how), self.path("out-%s.jsonl" % how)
            p = self.run_client("gone-" + how, out, "json", gate)
            self.restart(how, "gone-" + how, gate=gate)
            self.check(p, "gone-" + how, out, "json")


if __name__ == "__main__":
    unittest.main()
