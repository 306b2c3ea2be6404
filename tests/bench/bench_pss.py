#!/usr/bin/python3
"""Benchmark: what PSS (/proc/PID/smaps_rollup) costs, next to the other
per-process reads of a tick, and what the daemon spends on a job holding a
large process.

Part 1 — per read (rt_bench_pss, the daemon's own readers, 20 reads each,
median and max µs): a small process (sleep), processes with BENCH_PSS_GIB
(default "1 4") GiB of anonymous memory touched, once with 4 KiB pages
(MADV_NOHUGEPAGE) and once with transparent huge pages (MADV_HUGEPAGE), and a
process with BENCH_PSS_MAPS (default 20000) separate mappings.

Part 2 — the daemon (default interval 1 s, BENCH_SECONDS window, default
120 s) tracking one job whose root holds the largest of those sizes (4 KiB
pages): µs of daemon CPU per tick and the share of one core, to compare
with one smaps_rollup read of it (what reading PSS every tick would add),
and the job's last process_pss_mib.

  tests/bench/bench_pss.py [--quick]"""

import os
import subprocess
import sys
import time

import benchlib as B


def read_costs(pid):
    out = subprocess.run([B.TOOLS + "/rt_bench_pss", "--count", "20", str(pid)], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    return out[-1]


def daemon_cost(mib, seconds):
    interval = 1.0
    with B.Procs("big", mib, "nohuge") as big, B.Daemon(interval) as d:
        with d.connect() as c:
            job = B.start_job(c, big.pid)
            time.sleep(2)
            s0, cpu0, m0 = B.job_samples(c, job), B.process_cpu(d.pid)[0], time.monotonic()
            time.sleep(seconds)
            s1, cpu1, m1 = B.job_samples(c, job), B.process_cpu(d.pid)[0], time.monotonic()
            last = c.call("GetJobSamples", {"id": job, "offset": s1 - 1})["samples"][-1]
    ticks = s1 - s0
    return (cpu1 - cpu0) / 1e3 / ticks, ticks, 100.0 * (cpu1 - cpu0) / 1e9 / (m1 - m0), \
        last["cpu"]["process_pss_mib"]


def main(argv):
    quick = "--quick" in argv
    gibs = [float(x) for x in os.environ.get("BENCH_PSS_GIB", "1 4").split()]
    nmaps = int(B.env_float("BENCH_PSS_MAPS", 20000))
    seconds = B.env_float("BENCH_SECONDS", 30 if quick else 120)
    B.build("resource-trackerd", "rt_bench_procs", "rt_bench_pss")
    print("# PSS read cost — %s; THP: %s" % (B.machine(), open(
        "/sys/kernel/mm/transparent_hugepage/enabled").read().strip()))
    header = subprocess.run([B.TOOLS + "/rt_bench_pss", "--count", "1", str(os.getpid())],
                            check=True, capture_output=True, text=True).stdout.splitlines()[0]
    print("%-26s%s" % ("process", header))
    cases = [("sleep (small)", ("sleepers", 1))]
    for g in gibs:
        cases.append(("%g GiB, 4 KiB pages" % g, ("big", int(g * 1024), "nohuge")))
        cases.append(("%g GiB, huge pages" % g, ("big", int(g * 1024), "huge")))
    cases.append(("%d mappings" % nmaps, ("maps", nmaps)))
    for name, args in cases:
        with B.Procs(*args) as p:
            pid = p.pid
            if args[0] == "sleepers":
                pid = B.children(p.pid)[0]
            print("%-26s%s" % (name, read_costs(pid)))
            sys.stdout.flush()
    mib = int(max(gibs) * 1024)
    us, ticks, pct, pss = daemon_cost(mib, seconds)
    print("\ndaemon tracking one %d MiB process (4 KiB pages): %.1f µs CPU per tick over %d ticks "
          "(%.3f %% of a core); last sample process_pss_mib=%d" % (mib, us, ticks, pct, pss))


if __name__ == "__main__":
    main(sys.argv[1:])
