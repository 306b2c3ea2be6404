#!/usr/bin/python3
"""Benchmark: what a TAB costs, and listing a long history.

The bash completion runs `resource-trackerctl __complete CWORD WORDS...`
on every TAB; for a JOB argument it asks the daemon for the caller's
newest 200 jobs. `jobs` pages through ListJobs; its filters run in the
daemon, so `--limit 10` or `--name` reads only what it prints. Timed
against daemons holding 0, 1,000 and 10,000 finished jobs (each
registered and stopped on one sleeping process), BENCH_RUNS times each
(default 100) after 5 for warmup, as bench_run_wall.py times commands.

  tests/bench/bench_complete.py [--quick]"""

import os
import subprocess
import sys

import benchlib as B
from bench_run_wall import print_table, spawn_loop


def main(argv):
    quick = "--quick" in argv
    runs = int(B.env_float("BENCH_RUNS", 30 if quick else 100))
    B.build("resource-trackerd", "resource-trackerctl")
    print("# completion and jobs listing — %s; %d runs each" % (B.machine(), runs))
    cmds = [("true", ["true"]),
            ("__complete a verb", [B.CTL, "__complete", "1", "resource-trackerctl", "st"]),
            ("__complete a JOB", [B.CTL, "__complete", "2", "resource-trackerctl", "status", ""]),
            ("jobs --limit 10", [B.CTL, "jobs", "--limit", "10"]),
            ("jobs --name n7", [B.CTL, "jobs", "--name", "n7"]),
            ("jobs", [B.CTL, "jobs"]),
            ("jobs --format csv", [B.CTL, "jobs", "--format", "csv"])]
    for njobs in (0, 1000, 10000):
        sleeper = subprocess.Popen(["sleep", "3600"])
        with B.Daemon(1.0) as d:
            with d.connect() as c:
                for i in range(njobs):
                    jid = c.call("StartJob", {"pid": sleeper.pid, "name": "n%d" % i})["job"]["id"]
                    c.call("StopJob", {"id": jid})
            env = dict(os.environ, RESOURCE_TRACKER_SOCKET=d.socket)
            print("\n%d finished jobs in the daemon" % njobs)
            print_table([(name, spawn_loop(a, runs, env)) for name, a in cmds])
            sys.stdout.flush()
        sleeper.kill()
        sleeper.wait()


if __name__ == "__main__":
    main(sys.argv[1:])
