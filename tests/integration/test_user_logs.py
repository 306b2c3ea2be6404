"""What one user can make the daemon log (docs/admin.md, Logs): a real user
churns jobs whose exit status it reports after the daemon saw them end (the
daemon logs a line for each, besides the job's records). Every job keeps its
start and end records; the other lines stay within the per-user budget (a
burst of 10, then 1 a second), one summary line says how many were not
written, and another user's line is not crowded out."""

import json
import os
import pwd
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import UsersDaemonTest, setpriv, wait_for  # noqa: E402

CHURN_SECS = 6
BURST, PER_SEC = 10, 1  # RT_USER_LOG_BURST, RT_USER_LOG_PER_SEC (daemon/system/user_log.h)

# As a user, for SECS seconds (arguments: SOCKET SECS BATCH): BATCH short
# processes at a time are started as jobs and reaped here at once, so the
# daemon sees each end without its status ("ended"); then FinishJob reports
# the status after the end; one batch at least. Prints the job ids. Each
# process waits for its stdin to close, which happens once every StartJob
# of the batch was answered: a loaded machine cannot end one before its
# StartJob (a zombie is no process to track).
CHURNER = r"""
import json, socket, subprocess, sys, time
path, secs, batch = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
IFACE = "com.sparecores.ResourceTracker."
s = socket.socket(socket.AF_UNIX)
s.settimeout(30)
s.connect(path)
buf = b""
def call(method, params):
    global buf
    s.sendall(json.dumps({"method": IFACE + method, "parameters": params}).encode() + b"\0")
    while b"\0" not in buf:
        buf += s.recv(65536)
    msg, buf = buf.split(b"\0", 1)
    reply = json.loads(msg)
    assert "error" not in reply, reply
    return reply["parameters"]
ids, deadline = [], time.monotonic() + secs
while not ids or time.monotonic() < deadline:
    procs = [subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL) for _ in range(batch)]
    jobs = [call("StartJob", {"pid": p.pid})["job"]["id"] for p in procs]
    for p in procs:
        p.stdin.close()
        p.wait()
    for j in jobs:
        while call("GetJob", {"id": j})["job"]["state"] == "running":
            time.sleep(0.01)
        call("FinishJob", {"id": j, "exit_code": 3})
    ids += jobs
print(json.dumps(ids))
"""


class UserLogBudget(UsersDaemonTest):
    roles = ("churner", "other")

    def job_records(self, log, job_id, uid):
        started = re.search(r"Job %d started for \S+ \(uid %d\)" % (job_id, uid), log)
        ended = re.search(r"Job %d of \S+ \(uid %d\) (finished|failed|stopped|ended) after" % (job_id, uid), log)
        return bool(started), bool(ended)

    def churn(self, user, secs, batch):
        out = subprocess.run(setpriv(user) + [sys.executable, "-c", CHURNER, self.d.socket, str(secs), str(batch)],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, "the churner failed: " + out.stderr)
        return json.loads(out.stdout)

    def test_churn_keeps_job_records_and_bounds_the_rest(self):
        uid = pwd.getpwnam(self.churner).pw_uid
        other = pwd.getpwnam(self.other).pw_uid
        t0 = time.monotonic()
        jobs = self.churn(self.churner, CHURN_SECS, 10)
        # The other user's jobs, a burst's worth: the daemon reads a status
        # itself when it sees the zombie first, so not every job makes a line.
        other_jobs = self.churn(self.other, 0, BURST)
        # The first suppression's summary comes 10 s after it.
        summary = re.compile(r"(\d+) log messages? caused by uid %d suppressed in the last (\d+) s" % uid)
        wait_for(lambda: summary.search(self.d.read_log()), timeout=30, what="the summary line")
        log = self.d.read_log()
        elapsed = time.monotonic() - t0
        for j in jobs:
            self.assertEqual(self.job_records(log, j, uid), (True, True), "job %d's records" % j)
        mine = [ln for ln in log.splitlines() if re.search(r"uid %d\b" % uid, ln) or
                re.search(r"job \d+: exit status 3 reported after its end", ln) and
                int(re.search(r"job (\d+)", ln).group(1)) in jobs]
        records = [ln for ln in mine if re.search(r"info: Job \d+ (started for|of) ", ln)]
        summaries = [ln for ln in mine if summary.search(ln)]
        others = [ln for ln in mine if ln not in records and ln not in summaries]
        suppressed = sum(int(summary.search(ln).group(1)) for ln in summaries)
        print("%d jobs, %d record lines; %d other lines written, %d suppressed, in %.1f s"
              % (len(jobs), len(records), len(others), suppressed, elapsed))
        self.assertGreater(len(jobs), 5 * (BURST + PER_SEC * CHURN_SECS), "the user churned jobs")
        self.assertEqual(len(records), 2 * len(jobs))
        self.assertLessEqual(len(others), BURST + PER_SEC * elapsed + 1)
        # Most jobs caused a line (some statuses the daemon read itself, from
        # the zombie): far more than were written, the rest counted.
        self.assertGreater(suppressed, 3 * len(others))
        # The other user's lines are written (none suppressed), and its jobs' records.
        theirs = [j for j in other_jobs if "job %d: exit status 3 reported after its end" % j in log]
        self.assertTrue(theirs, "none of %s reported after its end" % other_jobs)
        self.assertNotRegex(log, r"log messages? caused by uid %d suppressed" % other)
        for j in other_jobs:
            self.assertEqual(self.job_records(log, j, other), (True, True))


if __name__ == "__main__":
    unittest.main()
