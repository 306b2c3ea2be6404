#!/usr/bin/python3
"""Benchmark: another client's Ping latency while many StreamJobs subscribers
(all=true, as root: top and the exporter) follow many jobs.

300 running jobs at 1 s; one client calls Ping every 5 ms for BENCH_SECONDS
(default 20; --quick 8), first with no subscriber (the yardstick, same run),
then with 200 subscribers of which 150 read every reply and 50 never read.
Prints Ping p50/p99/max for both, and the main thread's CPU per tick.

  tests/bench/bench_stream_load.py [--quick]"""

import os
import subprocess
import sys
import time

import benchlib as B
from subscribers import Subscribers, percentile, ping_latencies

INTERVAL = B.env_float("BENCH_INTERVAL", 1.0)
JOBS = int(B.env_float("BENCH_JOBS", 300))
READING, IDLE = 150, 50


def measure(d, seconds):
    m0 = B.task_cpu(d.pid, d.pid)[0]
    lat = ping_latencies(d.socket, seconds)
    main_ms = (B.task_cpu(d.pid, d.pid)[0] - m0) / (seconds / INTERVAL) / 1e6
    return [percentile(lat, p) * 1e3 for p in (0.5, 0.99, 1.0)] + [len(lat), main_ms]


def main(argv):
    seconds = 8 if "--quick" in argv else B.env_float("BENCH_SECONDS", 20)
    B.build("resource-trackerd", "resource-trackerctl")
    print("== bench_stream_load: %s" % B.machine())
    procs = []
    try:
        with B.Daemon(INTERVAL) as d:
            with d.connect() as c:
                for i in range(JOBS):
                    procs.append(subprocess.Popen(["sleep", "86400"]))
                    B.start_job(c, procs[-1].pid, "job%d" % i)
            time.sleep(3 * INTERVAL)
            print("%d jobs, interval %.1f s, Ping every 5 ms for %.0f s per row" % (JOBS, INTERVAL, seconds))
            print("%-34s %9s %9s %9s %7s %14s" % ("subscribers", "p50 ms", "p99 ms", "max ms", "pings",
                                                 "main ms/tick"))
            row = "%-34s %9.2f %9.2f %9.2f %7d %14.2f"
            print(row % tuple(["none (yardstick)"] + measure(d, seconds)))
            with Subscribers(d.socket, READING, IDLE) as subs:
                figures = measure(d, seconds)
            print(row % tuple(["%d reading + %d never reading" % (READING, IDLE)] + figures))
            r = subs.result
            print("readers: %d replies, %.1f MB read, %d closed by the daemon" %
                  (r["replies"], r["bytes"] / 1e6, r["closed"]))
    finally:
        for p in procs:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main(sys.argv[1:])
