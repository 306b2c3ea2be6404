#!/usr/bin/python3
"""Benchmark: the daemon's memory over time (VmRSS, VmHWM from
/proc/PID/status), to show a steady state and no growth across ticks.

Phase "steady": 50 jobs of 4 processes run for the whole phase.
Phase "churn": 50 job slots whose jobs (4 processes) end after
BENCH_JOB_SECONDS (default 5) and are replaced at once by new ones, so
thousands of jobs start, are sampled and finish.

Interval 0.1 s (BENCH_INTERVAL) so a minute holds 600 ticks. RSS is printed
at every BENCH_STEP seconds (default 60) up to BENCH_MINUTES (default 3).
Finished jobs stay in the registry until retention removes them (30 days by
default), so in the churn phase memory may grow by their records: the
growth per finished job is printed to tell records from a leak.

  tests/bench/bench_rss.py [--quick] [steady] [churn]"""

import sys
import time

import benchlib as B

INTERVAL = B.env_float("BENCH_INTERVAL", 0.1)
JOBS = int(B.env_float("BENCH_JOBS", 50))


def phase(name, minutes, step, churn):
    job_secs = B.env_float("BENCH_JOB_SECONDS", 5)
    print("\n## %s: %d jobs of 4 processes%s, interval %g s" % (
        name, JOBS, ", each ending after %g s and replaced" % job_secs if churn else "", INTERVAL))
    print("%8s %10s %10s %14s %12s" % ("t (s)", "VmRSS KiB", "VmHWM KiB", "jobs finished",
                                        "ticks"))
    with B.sleepers(1000), B.Daemon(INTERVAL) as d:
        slots = []
        finished = 0
        try:
            with d.connect() as c:
                def fill():
                    t = B.JobTree(4, seconds=int(job_secs) if churn else 86400)
                    slots.append(t)
                    B.start_job(c, t.pid)

                for _ in range(JOBS):
                    fill()
                start = time.monotonic()
                rows = []
                next_report = start + step
                end = start + minutes * 60
                while True:
                    now = time.monotonic()
                    if churn:
                        for t in list(slots):
                            if t.p.poll() is not None:
                                slots.remove(t)
                                finished += 1
                                fill()
                    if now >= next_report:
                        rss, hwm = B.status_kib(d.pid, "VmRSS", "VmHWM")
                        ticks = round((now - start) / INTERVAL)
                        rows.append((now - start, rss, finished))
                        print("%8.0f %10d %10d %14d %12d" % (now - start, rss, hwm, finished, ticks))
                        sys.stdout.flush()
                        next_report += step
                    if now >= end:
                        break
                    time.sleep(0.05)
        finally:
            B.kill_all(slots)
    (t0, r0, f0), (t1, r1, f1) = rows[0], rows[-1]
    line = "RSS %+d KiB from %.0f s to %.0f s" % (r1 - r0, t0, t1)
    if churn and f1 > f0:
        line += " over %d finished jobs: %.0f bytes per finished job" % (
            f1 - f0, (r1 - r0) * 1024.0 / (f1 - f0))
    print(line)


def main(argv):
    quick = "--quick" in argv
    which = [a for a in argv if not a.startswith("--")] or ["steady", "churn"]
    minutes = B.env_float("BENCH_MINUTES", 1 if quick else 3)
    step = B.env_float("BENCH_STEP", 20 if quick else 60)
    B.build("resource-trackerd", "rt_bench_procs")
    print("# daemon memory over time — %s" % B.machine())
    for w in which:
        phase(w, minutes, step, churn=(w == "churn"))


if __name__ == "__main__":
    main(sys.argv[1:])
