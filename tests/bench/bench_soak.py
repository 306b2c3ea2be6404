#!/usr/bin/python3
"""Benchmark: a soak of the daemon's memory. JOBS job slots at a short
interval (0.1 s) whose jobs end and are replaced (churn): each job lives
--job-seconds (default 30) and the slots are staggered, so a job ends and
another starts every job-seconds/JOBS. A job is a shell with two sleeping
children that starts a short-lived child every 0.2 s (the processes of a
job come and go too). The daemon's RSS (VmRSS, RssAnon from
/proc/PID/status; Pss_Anon, Private_Dirty from smaps_rollup) is printed
before the jobs, every --step seconds, at the end, and after every job
ended: memory must level off, and what the jobs held must come back.

  tests/bench/bench_soak.py [--minutes 3] [--jobs 20] [--job-seconds 30]
                            [--interval 0.1] [--step 30]

The figures in docs/performance.md come from --minutes 60 (an hour)."""

import argparse
import os
import subprocess
import sys
import time

import benchlib as B

JOB_SCRIPT = "sleep %d & sleep %d & while :; do /bin/true; sleep 0.2; done"


class Job:
    """A job of changing processes in its own process group, ended by kill()."""

    def __init__(self, conn, seconds):
        self.p = subprocess.Popen(["/bin/sh", "-c", JOB_SCRIPT % (seconds + 60, seconds + 60)],
                                  start_new_session=True, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL)
        self.id = B.start_job(conn, self.p.pid)
        self.ends = time.monotonic() + seconds

    def kill(self):
        try:
            os.killpg(self.p.pid, 9)
        except ProcessLookupError:
            pass
        self.p.wait()


HEADER = "%8s %-10s %10s %10s %10s %10s %8s %8s" % (
    "t (s)", "when", "VmRSS KiB", "RssAnon", "Pss_Anon", "Priv_Dirty", "started", "ended")


def row(d, t, when, started, ended):
    rss, anon = B.status_kib(d.pid, "VmRSS", "RssAnon")
    pss_anon, dirty = B.status_kib(d.pid, "Pss_Anon", "Private_Dirty", file="smaps_rollup")
    print("%8.0f %-10s %10d %10d %10d %10d %8d %8d" % (t, when, rss, anon, pss_anon, dirty,
                                                        started, ended), flush=True)
    return rss


def running_jobs(conn):
    return [j for j in conn.call("ListJobs")["jobs"] if j.get("state") == "running"]


def soak(a):
    print("\n## %d job slots, interval %g s, each job ending after %g s and replaced, %g min"
          % (a.jobs, a.interval, a.job_seconds, a.minutes))
    print(HEADER)
    figures = {}
    with B.Daemon(a.interval, prefix=a.prefix.split()) as d, d.connect() as c:
        slots, started, ended = [], 0, 0
        t0 = time.monotonic()
        time.sleep(3 * a.interval + 1)  # a few ticks of the host alone
        figures["start"] = row(d, 0, "start", 0, 0)
        try:
            for i in range(a.jobs):
                j = Job(c, a.job_seconds * (i + 1) / a.jobs)  # staggered ends
                slots.append(j)
                started += 1
            next_report = time.monotonic() + a.step
            end = t0 + a.minutes * 60
            while time.monotonic() < end:
                now = time.monotonic()
                for j in list(slots):
                    if now >= j.ends:
                        j.kill()
                        slots.remove(j)
                        ended += 1
                        slots.append(Job(c, a.job_seconds))
                        started += 1
                if now >= next_report:
                    figures.setdefault("first", row(d, now - t0, "running", started, ended))
                    next_report += a.step
                time.sleep(0.05)
            figures["end"] = row(d, time.monotonic() - t0, "end", started, ended)
        finally:
            B.kill_all(slots)
        ended += len(slots)
        B.rtlib.wait_for(lambda: not running_jobs(c), timeout=60, what="every job ended")
        time.sleep(12)  # the daemon gives memory back at most every 10 s
        figures["after"] = row(d, time.monotonic() - t0, "all ended", started, ended)
    print("RSS: %d KiB before the jobs, %d KiB at the first step, %d KiB at the end (%+d from "
          "the first step), %d KiB after every job ended (%+d from before the jobs)" % (
              figures["start"], figures.get("first", 0), figures["end"],
              figures["end"] - figures.get("first", figures["end"]), figures["after"],
              figures["after"] - figures["start"]))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=3)
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--job-seconds", type=float, default=30)
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--step", type=float, default=30)
    ap.add_argument("--prefix", default="", help="run the daemon under this (valgrind --tool=massif)")
    ap.add_argument("--quick", action="store_true", help="one minute, a step every 15 s")
    a = ap.parse_args(argv)
    if a.quick:
        a.minutes, a.step = 1, 15
    B.build("resource-trackerd")
    print("# daemon memory in a soak of churning jobs — %s" % B.machine())
    soak(a)


if __name__ == "__main__":
    main(sys.argv[1:])
