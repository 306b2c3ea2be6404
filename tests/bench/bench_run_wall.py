#!/usr/bin/python3
"""Benchmark: wall time of `resource-trackerctl run -- true` and of the
client's start (`version`) next to a bare `true`, with the daemon already
running (default interval 1 s, no other jobs), on a quiet machine and then
loaded with one busy loop per CPU (at the same priority as everything
else). Four commands are timed the same way, the yardstick first:

  true                                   the bare command
  resource-trackerctl version            the client's start alone
  resource-trackerctl run --quiet -- true   register, run, report the exit
  resource-trackerctl run -- true           the same, plus following the
                                         sample stream (samples to stderr,
                                         here /dev/null) until its end

Each command runs BENCH_RUNS times (default 200) after 5 for warmup, timed
by hyperfine (-N: no shell) when it is installed (Debian package
hyperfine), else by a posix_spawn loop here; mean/median/p90/min/max are
printed, and each median less the median of true. The number of shared
libraries the client maps comes from ldd. Then `true` and `run --quiet`
one at a time (0.25 s apart), as a person runs them, with the command in a
cgroup (the default) and as a process tree (cgroups.run=false).

  tests/bench/bench_run_wall.py [--quick] [--no-hyperfine] [--quiet-only]"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import benchlib as B

PAUSE = 0.25


def spawn_loop(argv, runs, env, pause=0.0):
    """Sorted wall times in ms of runs spawns (after 5 for warmup), pause
    seconds apart."""
    devnull = os.open(os.devnull, os.O_RDWR)
    fa = [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
    path = shutil.which(argv[0]) or argv[0]
    times = []
    for i in range(runs + 5):
        t = time.perf_counter()
        pid = os.posix_spawn(path, argv, env, file_actions=fa)
        _, status = os.waitpid(pid, 0)
        dt = time.perf_counter() - t
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError("%s exited %d" % (argv, os.waitstatus_to_exitcode(status)))
        if i >= 5:
            times.append(dt * 1e3)
        time.sleep(pause)
    os.close(devnull)
    return sorted(times)


def print_table(rows):
    print("%-26s %9s %9s %9s %9s %9s %14s" % ("command", "mean ms", "median ms", "p90 ms", "min ms",
                                            "max ms", "median − true"))
    base = None
    for name, t in rows:
        med = B.percentile(t, 0.5)
        base = med if base is None else base
        print("%-26s %9.2f %9.2f %9.2f %9.2f %9.2f %+11.2f ms" % (
            name, sum(t) / len(t), med, B.percentile(t, 0.9), t[0], t[-1], med - base))


def measure(cmds, runs, env, hyperfine):
    if hyperfine:
        with tempfile.NamedTemporaryFile(suffix=".json") as js:
            args = ["hyperfine", "-N", "--warmup", "5", "--runs", str(runs), "--style", "none",
                    "--export-json", js.name]
            for name, a in cmds:
                args += ["-n", name, " ".join(a)]
            subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL)
            results = json.load(open(js.name))["results"]
        print("hyperfine -N, %d runs each; load average %.1f" % (runs, os.getloadavg()[0]))
        print_table([(r["command"], sorted(t * 1e3 for t in r["times"])) for r in results])
    else:
        print("posix_spawn loop, %d runs each; load average %.1f" % (runs, os.getloadavg()[0]))
        print_table([(name, spawn_loop(a, runs, env)) for name, a in cmds])


def main(argv):
    quick = "--quick" in argv
    runs = int(B.env_float("BENCH_RUNS", 50 if quick else 200))
    B.build("resource-trackerd", "resource-trackerctl")
    true = shutil.which("true")
    cmds = [("true", [true]),
            ("ctl version", [B.CTL, "version"]),
            ("ctl run --quiet -- true", [B.CTL, "run", "--quiet", "--", true]),
            ("ctl run -- true", [B.CTL, "run", "--", true])]
    libs = subprocess.run(["ldd", B.CTL], capture_output=True, text=True, check=True).stdout
    print("# resource-trackerctl run -- true vs true — %s; daemon interval 1 s" % B.machine())
    print("the client maps %d shared libraries (ldd, vdso and loader included)" % len(libs.splitlines()))
    hyperfine = shutil.which("hyperfine") and "--no-hyperfine" not in argv
    with B.Daemon(1.0) as d:
        env = dict(os.environ, RESOURCE_TRACKER_SOCKET=d.socket)
        print("## quiet")
        measure(cmds, runs, env, hyperfine)
        if "--quiet-only" not in argv:
            n = os.cpu_count() or 1
            hogs = [subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"]) for _ in range(n)]
            try:
                time.sleep(2)
                print("## loaded: %d busy loops" % n)
                measure(cmds, runs, env, hyperfine)
            finally:
                for h in hogs:
                    h.kill()
                    h.wait()
        jobs = d.call("ListJobs")["jobs"]
        print("jobs recorded by the daemon: %d" % len(jobs))
    if "--quiet-only" not in argv:
        spaced(cmds[0], cmds[2], max(20, runs // 5))


def spaced(true, run, runs):
    """One command at a time, as a person runs them: PAUSE s apart, with
    the default daemon (the command in a cgroup of its own) and one with
    cgroups.run=false (a process tree). Moving a process into a cgroup
    waits for an RCU grace period in the kernel (the cgroup threadgroup
    lock's writer side) unless another move came just before it: back to
    back the wait is shared, one at a time it is not."""
    for label, args in (("cgroup", []), ("process tree", ["--set", "cgroups.run=false"])):
        with B.Daemon(1.0, args=args) as d:
            env = dict(os.environ, RESOURCE_TRACKER_SOCKET=d.socket)
            print("## one at a time, %.2f s apart, %s: posix_spawn loop, %d runs each" % (PAUSE, label, runs))
            print_table([(name, spawn_loop(a, runs, env, PAUSE)) for name, a in (true, run)])


if __name__ == "__main__":
    main(sys.argv[1:])
