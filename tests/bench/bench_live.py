#!/usr/bin/python3
"""Benchmark: what the live views cost the daemon, and what a scrape costs.

1. The main thread's CPU per tick with 50 running jobs (4 processes each)
   and 0, 1, 10 or 50 StreamJobs subscribers (all=true, as top and the
   exporter call it): each subscriber gets every job with its figures once
   per tick, built on the main thread. CPU from /proc/PID/task/PID/schedstat
   over a window of BENCH_SECONDS (default 30) at the default interval (1 s).
   The sampler thread's CPU is printed too: it does nothing per subscriber.
2. `resource-trackerctl metrics` (one scrape: Info, GetHostSample and the
   first StreamJobs reply) against that daemon: wall time and size of the
   text, median and 90th percentile of 30 runs, for the host only and for
   the 50 jobs.

  tests/bench/bench_live.py [--quick]"""

import os
import select
import subprocess
import sys
import time

import benchlib as B

INTERVAL = B.env_float("BENCH_INTERVAL", 1.0)
SUBSCRIBERS = (0, 1, 10, 50)
JOBS = 50


def subscribe(daemon, n):
    conns = []
    for _ in range(n):
        c = daemon.connect()
        c.send(B.rtlib.IFACE + ".StreamJobs", {"all": True}, more=True)
        conns.append(c)
    return conns


def drain(conns, until):
    """Read every reply until the deadline (subscribers that keep up)."""
    while time.monotonic() < until:
        ready, _, _ = select.select([c.sock for c in conns], [], [], 0.1) if conns else ([], [], time.sleep(0.1))
        for c in conns:
            if c.sock in ready:
                c.recv()


def main_thread_cpu(daemon, conns, seconds):
    sampler = next(t for t, n in B.tasks(daemon.pid).items() if n == "rt-sampler")
    m0, s0 = B.task_cpu(daemon.pid, daemon.pid)[0], B.task_cpu(daemon.pid, sampler)[0]
    drain(conns, time.monotonic() + seconds)
    m1, s1 = B.task_cpu(daemon.pid, daemon.pid)[0], B.task_cpu(daemon.pid, sampler)[0]
    ticks = seconds / INTERVAL
    return (m1 - m0) / ticks / 1e6, (s1 - s0) / ticks / 1e6


def scrape(daemon, *args):
    env = dict(os.environ, RESOURCE_TRACKER_SOCKET=daemon.socket)
    times, size = [], 0
    for _ in range(30):
        t0 = time.monotonic()
        p = subprocess.run([B.CTL, "metrics"] + list(args), env=env, capture_output=True, check=True)
        times.append((time.monotonic() - t0) * 1000)
        size = len(p.stdout)
    times.sort()
    return B.percentile(times, 0.5), B.percentile(times, 0.9), size


def main(argv):
    seconds = 8 if "--quick" in argv else B.env_float("BENCH_SECONDS", 30)
    B.build("resource-trackerd", "resource-trackerctl", "rt_bench_procs")
    print("== bench_live: %s" % B.machine())
    trees = []
    try:
        with B.Daemon(INTERVAL) as d:
            with d.connect() as c:
                for i in range(JOBS):
                    trees.append(B.JobTree(4))
                    B.start_job(c, trees[-1].pid, "job%d" % i)
            time.sleep(3 * INTERVAL)
            print("%d jobs of 4 processes, interval %.1f s, %.0f s per row" % (JOBS, INTERVAL, seconds))
            print("%-12s %16s %16s" % ("subscribers", "main ms/tick", "sampler ms/tick"))
            for n in SUBSCRIBERS:
                conns = subscribe(d, n)
                try:
                    main_ms, sampler_ms = main_thread_cpu(d, conns, seconds)
                finally:
                    for c in conns:
                        c.close()
                print("%-12d %16.3f %16.3f" % (n, main_ms, sampler_ms))
            print("%-24s %10s %10s %10s" % ("metrics scrape", "p50 ms", "p90 ms", "bytes"))
            for label, args in (("host only", ["--jobs", "none"]), ("%d jobs" % JOBS, [])):
                p50, p90, size = scrape(d, *args)
                print("%-24s %10.1f %10.1f %10d" % (label, p50, p90, size))
    finally:
        B.kill_all(trees)


if __name__ == "__main__":
    main(sys.argv[1:])
