#!/usr/bin/python3
"""What adoption's scan costs (docs/admin.md, "Adoption"): the daemon's main
thread CPU per second (it scans once a second) with adopt.slurm,
adopt.containers and a pattern on, against the same daemon with them off
(the yardstick, measured in the same run on the same cgroups): with no
matching cgroup, with N running containers adopted (docker's cgroupfs
layout, one sleeper each) and with N empty ones (looked at each scan, never
adopted). BENCH_SECONDS (30) per scenario, N = BENCH_CGROUPS (50).

  tests/bench/bench_adopt.py"""

import contextlib
import os
import secrets
import subprocess
import sys
import time

import benchlib as B

SECONDS = B.env_float("BENCH_SECONDS", 30)
N = int(B.env_float("BENCH_CGROUPS", 50))
ON = ["--set", "adopt.slurm=true", "--set", "adopt.containers=true", "--set", "adopt.cgroups=/rt-bench-none/*"]


class Container(B.Cgroup):
    def __init__(self):
        super().__init__("x")
        self.path = "/docker/" + secrets.token_hex(32)
        self.dirs = [r + self.path for r in B.rtlib.CGROUP_ROOTS if os.path.isfile(os.path.join(r, "cgroup.procs"))]


def main_thread_us_per_sec(args, populated, empty):
    with contextlib.ExitStack() as stack:
        conts = [stack.enter_context(Container()) for _ in range(populated + empty)]
        procs = []
        try:
            for c in conts[:populated]:
                procs.append(subprocess.Popen(["sleep", "86400"], preexec_fn=c.enter))
            d = stack.enter_context(B.Daemon(1.0, args=args))
            if args and populated:
                B.rtlib.wait_for(lambda: len(d.call("ListJobs", {"running_only": True})["jobs"]) == populated,
                                 timeout=60, what="the containers adopted")
            time.sleep(2)
            c0, t0 = B.task_cpu(d.pid, d.pid)[0], time.monotonic()
            time.sleep(SECONDS)
            c1, t1 = B.task_cpu(d.pid, d.pid)[0], time.monotonic()
            return (c1 - c0) / 1e3 / (t1 - t0)
        finally:
            for p in procs:
                p.kill()
                p.wait()
        # cgroups removed by their contexts, after the daemon stopped


def main():
    B.build("resource-trackerd")
    print("# adoption's scan — %s; main thread µs of CPU per second (one scan a second), %g s each"
          % (B.machine(), SECONDS))
    print("%-28s %10s %10s %10s" % ("scenario", "off µs/s", "on µs/s", "scan µs"))
    for name, populated, empty in (("no matching cgroup", 0, 0), ("%d containers adopted" % N, N, 0),
                                   ("%d empty containers" % N, 0, N)):
        off = main_thread_us_per_sec([], populated, empty)
        on = main_thread_us_per_sec(ON, populated, empty)
        print("%-28s %10.1f %10.1f %10.1f" % (name, off, on, on - off))
        sys.stdout.flush()
    B.rtlib.remove_cgroup("/docker")


if __name__ == "__main__":
    main()
