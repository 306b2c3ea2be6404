#!/usr/bin/python3
"""Benchmark: the daemon's CPU per tick for host-only sampling and for jobs
of 4 processes, on a host with extra sleeping processes spawned here.

Each scenario starts a fresh Release daemon at the default interval (1 s;
BENCH_INTERVAL), spawns the sleepers and the jobs, lets it settle, then
reads the CPU time of every daemon thread (on-CPU ns from /proc/PID/task/
TID/schedstat, so short windows still measure exactly) before and after a window of BENCH_SECONDS (default 60).
Ticks are counted from a job's samples (or window / interval without
jobs). "% core" is daemon CPU time over wall time. The default interval
matters: slow reads (the /proc listing for the process count, PSS of large
processes) are spaced in time, not in ticks.

  tests/bench/bench_tick_cpu.py [--callgrind] [--quick] [SCENARIO...]

--callgrind runs the daemon under valgrind's callgrind instead and reports
instructions per tick (user space only, repeatable on a busy machine): the
counters are zeroed after the settle time and dumped after the window
(default 30 s); ticks are the calls of rt_host_sampler_collect in between. The dumps stay
in $BENCH_OUT (default /tmp/rt-bench) for callgrind_annotate.

The yardstick, measured in the same window on the same processes:
rt_bench_readloop reads every file a tick needs (the host's, the /proc
listing, each job process's stat, io and children) the plain way, open,
read, close, every interval, and parses nothing; "× read" is the daemon's
CPU per tick over the loop's CPU per round (target: at most 1.0 with a job
on a quiet host, 0.7 with 1,000 extra sleepers).

Scenarios are NAME=SLEEPERS:JOBS[:PROCS_PER_JOB[:cgroup]]; the default set is
host=1000:0 1job-q=0:1 1job=1000:1 1job-5k=5000:1 50jobs=1000:50 50jobs-5k=5000:50
(1job-q: the host's own processes only, about a hundred on the CI VM). With
"cgroup" each job is a cgroup made here (in every hierarchy mounted) that
its processes start in, tracked with StartJob's cgroup; --cgroup-jobs runs
the set that compares them with process trees of 4 and 1,000 processes,
each on a host of 1,004 processes in all."""

import contextlib
import os
import re
import signal
import subprocess
import sys
import time

import benchlib as B

DEFAULT = ["host=1000:0", "1job-q=0:1", "1job=1000:1", "1job-5k=5000:1", "50jobs=1000:50", "50jobs-5k=5000:50"]
CGROUP_JOBS = ["host-1004=1004:0", "tree-4=1000:1:4", "tree-1000=4:1:1000", "cgroup-4=1000:1:4:cgroup",
               "cgroup-1000=4:1:1000:cgroup"]
INTERVAL = B.env_float("BENCH_INTERVAL", 1.0)
SETTLE = 3.0
OUT = os.environ.get("BENCH_OUT", "/tmp/rt-bench")


def parse_scenario(s):
    name, _, spec = s.partition("=")
    parts = spec.split(":")
    cgroup = parts[3:] == ["cgroup"]
    parts = [int(x) for x in parts[:3]]
    return name, parts[0], parts[1], parts[2] if len(parts) > 2 else 4, cgroup


class ReadLoop:
    """rt_bench_readloop over the given job roots: the yardstick."""

    def __init__(self, interval, roots):
        self.args = [os.path.join(B.TOOLS, "rt_bench_readloop"), str(interval)] + [str(p) for p in roots]

    def __enter__(self):
        self.p = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.pid = int(self.p.stdout.readline().split()[1])
        return self

    def rounds(self):
        os.kill(self.pid, signal.SIGUSR1)
        return int(self.p.stdout.readline().split()[1])

    def __exit__(self, *a):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def sampler_tid(pid):
    for tid, name in B.tasks(pid).items():
        if name == "rt-sampler":
            return tid
    return None


def callgrind_ticks_and_ir(path):
    """(calls of rt_host_sampler_collect, total Ir) from a callgrind dump."""
    names, calls, total = {}, 0, 0
    cur_cfn = None
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line)
            if m:
                if m.group(2):
                    names[m.group(1)] = m.group(2).strip()
                if line.startswith("cfn="):
                    cur_cfn = names.get(m.group(1))
                continue
            if line.startswith("calls=") and cur_cfn == "rt_host_sampler_collect":
                calls += int(line.split("=", 1)[1].split()[0])
            elif line.startswith(("summary:", "totals:")):
                total = max(total, int(line.split()[1]))
    return calls, total


def run_scenario(name, nsleep, njobs, nprocs, cgroup, seconds, callgrind):
    prefix = []
    cg_file = None
    if callgrind:
        os.makedirs(OUT, exist_ok=True)
        cg_file = os.path.join(OUT, "callgrind.%s.out" % name)
        for f in os.listdir(OUT):
            if f.startswith("callgrind.%s.out" % name):
                os.unlink(os.path.join(OUT, f))
        prefix = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + cg_file]
    with contextlib.ExitStack() as stack:
        d = stack.enter_context(B.Daemon(INTERVAL, prefix=prefix))
        stack.enter_context(B.sleepers(nsleep))
        cgroups = [stack.enter_context(B.Cgroup("%s-%d" % (name, i))) if cgroup else None for i in range(njobs)]
        trees = []
        try:
            for cg in cgroups:
                trees.append(B.JobTree(nprocs, cgroup=cg))
            with d.connect() as c:
                ids = [c.call("StartJob", {"cgroup": cg.path})["job"]["id"] if cg else B.start_job(c, t.pid)
                       for t, cg in zip(trees, cgroups)]
                time.sleep(max(SETTLE, 3 * INTERVAL) * (3 if callgrind else 1))
                if callgrind:
                    subprocess.run(["callgrind_control", "-z", str(d.pid)], check=True,
                                   stdout=subprocess.DEVNULL)
                    time.sleep(seconds)
                    subprocess.run(["callgrind_control", "-d", str(d.pid)], check=True,
                                   stdout=subprocess.DEVNULL)
                    dumps = sorted(f for f in os.listdir(OUT)
                                   if f.startswith(os.path.basename(cg_file) + "."))
                    ticks, ir = callgrind_ticks_and_ir(os.path.join(OUT, dumps[-1]))
                    return {"ticks": ticks, "ir": ir, "tracked": njobs * nprocs,
                            "dump": os.path.join(OUT, dumps[-1])}
                tid = sampler_tid(d.pid)
                with ReadLoop(INTERVAL, [t.pid for t in trees]) as loop:
                    time.sleep(SETTLE)
                    s0 = B.job_samples(c, ids[0]) if ids else 0
                    r0, l0 = loop.rounds(), B.process_cpu(loop.pid)
                    p0, t0, m0 = B.process_cpu(d.pid), B.task_cpu(d.pid, tid), time.monotonic()
                    time.sleep(seconds)
                    p1, t1, m1 = B.process_cpu(d.pid), B.task_cpu(d.pid, tid), time.monotonic()
                    r1, l1 = loop.rounds(), B.process_cpu(loop.pid)
                wall = m1 - m0
            with d.connect() as c:  # the first one idled out (limits.idle_timeout) in a long window
                s1 = B.job_samples(c, ids[0]) if ids else 0
            rss, hwm = B.status_kib(d.pid, "VmRSS", "VmHWM")
        finally:
            B.kill_all(trees)
    ticks = s1 - s0 if ids else round((m1 - m0) / INTERVAL)
    return {
        "ticks": ticks,
        "tracked": njobs * nprocs,
        "proc_us": (p1[0] - p0[0]) / 1e3 / ticks,
        "core_pct": 100.0 * (p1[0] - p0[0]) / 1e9 / wall,
        "sampler_us": (t1[0] - t0[0]) / 1e3 / ticks,
        "rss_kib": rss,
        "hwm_kib": hwm,
        "read_us": (l1[0] - l0[0]) / 1e3 / max(1, r1 - r0),
    }


def main(argv):
    callgrind = "--callgrind" in argv
    quick = "--quick" in argv
    scen = [a for a in argv if not a.startswith("--")] or (CGROUP_JOBS if "--cgroup-jobs" in argv else DEFAULT)
    seconds = B.env_float("BENCH_SECONDS", (10 if quick else 30) if callgrind else
                          (20 if quick else 60))
    B.build("resource-trackerd", "rt_bench_procs", "rt_bench_readloop")
    print("# daemon CPU per tick — %s; interval %.2g s, window %g s%s"
          % (B.machine(), INTERVAL, seconds, ", callgrind" if callgrind else ""))
    if callgrind:
        print("%-10s %8s %5s %8s %6s %14s" % ("scenario", "sleepers", "jobs", "tracked", "ticks",
                                              "Ir/tick"))
    else:
        print("%-10s %8s %5s %8s %6s %11s %11s %8s %9s %11s %7s" % (
            "scenario", "sleepers", "jobs", "tracked", "ticks", "µs/tick", "sampler µs",
            "% core", "RSS KiB", "read µs", "× read"))
    results = {}
    for s in scen:
        name, nsleep, njobs, nprocs, cgroup = parse_scenario(s)
        r = run_scenario(name, nsleep, njobs, nprocs, cgroup, seconds, callgrind)
        r["jobs"] = njobs
        results[name] = r
        if callgrind:
            r["proc_us"] = r["ir"] / max(1, r["ticks"])  # per tick, for the summary below
            print("%-10s %8d %5d %8d %6d %14.0f" % (name, nsleep, njobs, r["tracked"], r["ticks"],
                                                    r["proc_us"]))
        else:
            print("%-10s %8d %5d %8d %6d %11.1f %11.1f %8.3f %9d %11.1f %7.2f" % (
                name, nsleep, njobs, r["tracked"], r["ticks"], r["proc_us"], r["sampler_us"],
                r["core_pct"], r["rss_kib"], r["read_us"], r["proc_us"] / r["read_us"]))
        sys.stdout.flush()
    if "1job" in results and "50jobs" in results:
        one, fifty = results["1job"], results["50jobs"]
        print("per job beyond the first: %.0f %s/tick ((50jobs − 1job) / 49)"
              % ((fifty["proc_us"] - one["proc_us"]) / (fifty["jobs"] - one["jobs"]),
                 "Ir" if callgrind else "µs"))
    if "host-1004" in results:
        unit = "Ir" if callgrind else "µs"
        host = results["host-1004"]["proc_us"]
        for kind in ("tree", "cgroup"):
            if kind + "-4" in results and kind + "-1000" in results:
                few, many = results[kind + "-4"]["proc_us"], results[kind + "-1000"]["proc_us"]
                print("%s job of 1,000 processes: %.2fx the tick of one of 4; beyond the host sample "
                      "%.0f and %.0f %s/tick" % (kind, many / few, many - host, few - host, unit))
    if callgrind:
        print("dumps: %s (callgrind_annotate --inclusive=yes FILE)" % OUT)


if __name__ == "__main__":
    main(sys.argv[1:])
