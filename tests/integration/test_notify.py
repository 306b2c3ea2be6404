"""Requested against used and a word at the end, through the real daemon and
client: --request and TRACKER_REQUEST carried to the job, its efficiency and
notes in GetJob, status, jobs and recommend; a webhook receiver on loopback
gets the end-of-job POST with the figures, efficiency and notes, a mail lands
in a sendmail stand-in; a crashed and an OOM-killed job notify too; each
user's own targets; and no webhook secret in the log (the journal's text),
in another user's view or an administrator's."""

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from noticelib import Sendmail, WebhookReceiver, body_json  # noqa: E402
from rtlib import CTL, Daemon, UsersDaemonTest, call_as, run_ctl, wait_for  # noqa: E402

SECRET = "T0K3N-s3cr3t"
BUSY = "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"


class NotifyTest(UsersDaemonTest):
    roles = ("u1", "u2")

    @classmethod
    def daemon(cls):
        cls.sendmail = Sendmail()
        cls.addClassCleanup(cls.sendmail.close)
        cls.conf_dir = tempfile.mkdtemp(prefix="rt-notify-")
        cls.addClassCleanup(shutil.rmtree, cls.conf_dir, True)
        conf = os.path.join(cls.conf_dir, "rt.conf")
        with open(conf, "w") as f:
            # notes at any length: the test's jobs are short
            f.write('notify: { sendmail = "%s"; };\nnotes: { min_duration = 0; };\n' % cls.sendmail.path)
        return Daemon(interval=0.2, args=["--config", conf])

    def setUp(self):
        self.hook = WebhookReceiver()
        self.addCleanup(self.hook.close)

    def run_job(self, user, *args, rc=0, env=None):
        p = run_ctl(self.d, "run", "-q", *args, user=user, env=env)
        self.assertEqual(p[0], rc, p[2])
        return p

    def job(self, jid):
        return self.d.call("GetJob", {"id": jid})["job"]

    def latest(self, user):
        uid = pwd.getpwnam(user).pw_uid
        return self.d.call("ListJobs", {"owner_uid": uid, "limit": 1})["jobs"][0]

    def test_webhook_and_mail_at_the_end(self):
        url = self.hook.url("/hooks/" + SECRET)
        self.run_job(self.u1, "-n", "train", "--request", "cpus=4,mem=1G", "--notify", url, "--notify",
                     "mailto:" + self.u1, "--", "sh", "-c", BUSY + "; exit 3", rc=3)
        req = self.hook.wait(1)[0]
        self.assertEqual(req["path"], "/hooks/" + SECRET)
        self.assertEqual(req["headers"]["Content-Type"], "application/json")
        body = body_json(req)
        job = body["job"]
        self.assertEqual((job["name"], job["state"], job["exit_code"]), ("train", "failed", 3))
        self.assertEqual(job["request"], {"cpus": 4.0, "memory_bytes": 1 << 30})
        # seff's CPU efficiency: CPU time over 4 CPUs x the wall time
        s = job["summary"]
        self.assertAlmostEqual(job["efficiency"]["cpu_pct"], 100 * s["cpu_secs"] / (4 * s["duration_secs"]), delta=0.2)
        self.assertAlmostEqual(job["efficiency"]["memory_pct"], 100 * s["memory_peak_bytes"] / (1 << 30), delta=0.1)
        self.assertIsNone(job["efficiency"]["gpu_pct"])
        ids = [n["id"] for n in job["notes"]]
        self.assertEqual(ids, ["cpu_efficiency", "memory_unused"])
        self.assertEqual(job["notes"][0]["suggest"], {"cpus": 1.0})
        # what Slack shows: the end, the figures, the notes
        self.assertTrue(body["text"].startswith("Job %d (train) of %s failed (exit code 3) on " % (job["id"], self.u1)),
                        body["text"])
        for n in job["notes"]:
            self.assertIn("- " + n["text"] + "\n", body["text"])
        self.assertEqual(job["notify_targets"], 2)
        self.assertNotIn(SECRET, req["body"])  # the job as it is shown: the targets are not
        # the mail, through sendmail -t
        mail = self.sendmail.wait(1)[-1]
        self.assertTrue(mail.startswith("To: %s\nSubject: [resource-tracker] Job %d (train) failed (exit code 3) "
                                        "on " % (self.u1, job["id"])), mail)
        self.assertIn(": 2 notes\n", mail)
        self.assertIn("\n\n" + body["text"], mail)

        # Nobody sees the secret: not the owner's GetJob, not an administrator's,
        # not the log (the journal's text); another user not even the job.
        mine = call_as(self.u1, self.d.socket, "GetJob", {"id": job["id"]})
        self.assertEqual(mine[0][0], "ok")
        self.assertNotIn(SECRET, json.dumps(mine))
        self.assertNotIn(SECRET, json.dumps(self.job(job["id"])))
        self.assertNotIn(SECRET, json.dumps(self.d.call("ListJobs")))
        theirs = call_as(self.u2, self.d.socket, "GetJob", {"id": job["id"]})[0]
        self.assertEqual(theirs[0], "error")
        self.assertNotIn(SECRET, json.dumps(theirs))
        wait_for(lambda: "Job %d (train) of %s (uid " % (job["id"], self.u1) in self.d.read_log(), what="the journal record")
        log = self.d.read_log()
        self.assertNotIn(SECRET, log)
        self.assertIn("2 notes: cpu_efficiency memory_unused", log)
        # It is kept where a restart finds it: the record, root's alone.
        record = os.path.join(self.d.state_dir, "jobs", str(job["id"]), "job.json")
        st = os.stat(record)
        self.assertEqual((st.st_uid, st.st_mode & 0o007), (0, 0))
        with open(record) as f:
            self.assertIn(SECRET, f.read())

    def test_status_jobs_and_recommend_show_the_request(self):
        self.run_job(self.u1, "-n", "asked", "--", "sh", "-c", BUSY, env={"TRACKER_REQUEST": "cpus=8,mem=512M"})
        job = self.latest(self.u1)
        self.assertEqual(job["request"], {"cpus": 8.0, "memory_bytes": 512 << 20})
        out = run_ctl(self.d, "status", str(job["id"]), user=self.u1, check=0)[1]
        eff = job["efficiency"]
        self.assertIn("\nAsked    8 CPUs, 512 MiB; efficiency CPU %.0f%%, memory %.0f%%\n"
                      % (eff["cpu_pct"], eff["memory_pct"]), out)
        self.assertIn("\nNote     " + job["notes"][0]["text"] + "\n", out)
        row = run_ctl(self.d, "jobs", "--limit", "1", user=self.u1, check=0)[1].splitlines()[1]
        self.assertIn(" %.0f/%.0f/- " % (eff["cpu_pct"], eff["memory_pct"]), row)
        rec = run_ctl(self.d, "recommend", str(job["id"]), user=self.u1, check=0)[1]
        self.assertRegex(rec, r"\n  CPUs     asked for 8, used \d\.\d\d on average: ask for 1\n")
        rj = json.loads(run_ctl(self.d, "recommend", "--json", str(job["id"]), user=self.u1, check=0)[1])
        self.assertEqual(rj["request"], job["request"])
        self.assertEqual(rj["notes"], job["notes"])
        # A job that asked for nothing has no efficiency and no notes.
        self.run_job(self.u1, "--", "true")
        plain = self.latest(self.u1)
        self.assertEqual((plain["request"], plain["efficiency"], plain["notes"]), (None, None, []))

    def test_bad_requests_and_targets_are_refused(self):
        marker = os.path.join(self.conf_dir, "ran")
        cmd = ["--", "sh", "-c", "touch " + marker]
        rc, _, err = run_ctl(self.d, "run", "--request", "cpus=0", *cmd)
        self.assertEqual(rc, 2)
        self.assertIn("--request", err)
        rc, _, err = run_ctl(self.d, "run", *cmd, env={"TRACKER_REQUEST": "mem=64"})
        self.assertEqual(rc, 2)
        self.assertIn("TRACKER_REQUEST 'mem=64': mem=64 is not a size with a unit", err)
        for bad in ("ftp://example.org/x", "mailto:a@b,c@d", "mailto:-oQ/tmp/x"):
            rc, _, err = run_ctl(self.d, "run", "--notify", bad, *cmd)
            self.assertEqual(rc, 2, err)
            self.assertIn("--notify: a target is", err)
        rc, _, err = run_ctl(self.d, "run", *cmd, env={"TRACKER_NOTIFY": "https://a/1 https://a/2 https://a/3 "
                                                                         "https://a/4 https://a/5"})
        self.assertEqual(rc, 2, err)
        self.assertFalse(os.path.exists(marker))  # never started

    def test_a_crashed_job_notifies(self):
        self.run_job(self.u1, "--notify", self.hook.url(), "--", "sh", "-c", "kill -KILL $$", rc=137)
        job = body_json(self.hook.wait(1)[0])["job"]
        self.assertEqual((job["state"], job["signal"], job["exit_code"]), ("failed", 9, 137))

    def test_an_oom_killed_job_notifies(self):
        # A memory-limited cgroup (v1, as Slurm's on this machine) that the
        # kernel's OOM killer enforces.
        cg = "/sys/fs/cgroup/memory/rt-test-oom-%d" % os.getpid()
        if not os.path.isdir(os.path.dirname(cg)):
            self.skipTest("no cgroup v1 memory hierarchy")
        os.mkdir(cg)

        def remove():
            def empty():
                with open(cg + "/cgroup.procs") as f:
                    return not f.read().split()
            wait_for(empty, what="the cgroup to empty")
            os.rmdir(cg)
        self.addCleanup(remove)
        with open(cg + "/memory.limit_in_bytes", "w") as f:
            f.write(str(64 << 20))
        hog = "x = bytearray(256 << 20); x[::4096] = b'x' * (len(x) // 4096)"
        p = subprocess.run(["sh", "-c", 'echo $$ > %s/cgroup.procs && exec "$0" "$@"' % cg, CTL, "run", "-q",
                            "--request", "mem=64M", "--notify", self.hook.url(), "--", "/usr/bin/python3", "-c", hog],
                           env=dict(os.environ, RESOURCE_TRACKER_SOCKET=self.d.socket), capture_output=True,
                           timeout=60)
        self.assertEqual(p.returncode, 137, p.stderr)
        job = body_json(self.hook.wait(1)[0])["job"]
        self.assertEqual((job["state"], job["signal"]), ("failed", 9))
        self.assertEqual(job["request"], {"memory_bytes": 64 << 20})

    def test_each_users_own_targets(self):
        url = self.hook.url("/mine/" + SECRET)
        self.assertEqual(run_ctl(self.d, "notify", "--set", url, "mailto:" + self.u1, user=self.u1)[0], 0)
        self.addCleanup(run_ctl, self.d, "notify", "--clear", user=self.u1)
        self.assertEqual(run_ctl(self.d, "notify", user=self.u1, check=0)[1], url + "\nmailto:%s\n" % self.u1)
        # kept for that user alone, root's only
        uid = pwd.getpwnam(self.u1).pw_uid
        st = os.stat(os.path.join(self.d.state_dir, "notify", "%d.json" % uid))
        self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (0, 0o600))
        self.assertEqual(json.loads(run_ctl(self.d, "notify", "--json", user=self.u2, check=0)[1]), {"targets": []})
        # a job with no targets of its own goes to them
        self.run_job(self.u1, "-n", "defaults", "--", "true")
        req = self.hook.wait(1)[0]
        self.assertEqual(req["path"], "/mine/" + SECRET)
        self.assertEqual(body_json(req)["job"]["name"], "defaults")
        self.assertNotIn(SECRET, self.d.read_log())
        rc, _, err = run_ctl(self.d, "notify", "--set", "gopher://x", user=self.u1)
        self.assertEqual(rc, 2, err)
        self.assertEqual(run_ctl(self.d, "notify", "--clear", user=self.u1)[0], 0)
        self.assertEqual(json.loads(run_ctl(self.d, "notify", "--json", user=self.u1, check=0)[1]), {"targets": []})


if __name__ == "__main__":
    unittest.main()
