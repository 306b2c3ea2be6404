#!/usr/bin/python3
"""Benchmark: latency of GetHostSample with 200 concurrent clients.

rt_bench_clients opens BENCH_CLIENTS (default 200) connections and calls
on each for BENCH_SECONDS (default 10), from a single epoll thread so the
client side stays cheap on a small machine; it prints p50/p90/p99/p99.9/max
over every call. Two loads: "closed" (each client calls again as soon as
it has its reply: the daemon's throughput, latency mostly queueing behind
the 199 other calls), "every 10 ms" per client (20,000 calls/s in all)
and "every 100 ms" (2,000 calls/s).
Each against an idle daemon (interval 1 s) and one sampling 50 jobs of 4
processes at 0.1 s (the sampler thread busy beside the server). The
daemon's CPU over the window is printed too (clients and daemon share the
machine's cores).

  tests/bench/bench_latency.py [--quick]"""

import subprocess
import sys
import time

import benchlib as B


def scenario(name, interval, njobs, clients, seconds, period_ms):
    with B.sleepers(1000), B.Daemon(interval) as d:
        trees = []
        try:
            with d.connect() as c:
                for _ in range(njobs):
                    t = B.JobTree(4)
                    trees.append(t)
                    B.start_job(c, t.pid)
            time.sleep(2)
            cpu0, m0 = B.process_cpu(d.pid)[0], time.monotonic()
            out = subprocess.run([B.TOOLS + "/rt_bench_clients", "--socket", d.socket,
                                  "--clients", str(clients), "--seconds", str(seconds),
                                  "--period-ms", str(period_ms)],
                                 check=True, capture_output=True, text=True).stdout
            cpu1, m1 = B.process_cpu(d.pid)[0], time.monotonic()
        finally:
            B.kill_all(trees)
    f = dict(kv.split("=") for kv in out.split())
    print("%-18s %-12s %7s %8s %9s %8s %8s %8s %9s %9s %10s" % (
        name, "closed" if period_ms == 0 else "every %g ms" % period_ms, f["clients"], f["calls"], f["calls_per_s"], f["p50_us"], f["p90_us"], f["p99_us"],
        f["p999_us"], f["max_us"], "%.0f %%" % (100.0 * (cpu1 - cpu0) / 1e9 / (m1 - m0))))
    sys.stdout.flush()


def main(argv):
    quick = "--quick" in argv
    clients = int(B.env_float("BENCH_CLIENTS", 200))
    seconds = B.env_float("BENCH_SECONDS", 5 if quick else 10)
    B.build("resource-trackerd", "rt_bench_procs", "rt_bench_clients")
    print("# GetHostSample latency — %s; %d clients, %g s" % (B.machine(), clients, seconds))
    print("%-18s %-12s %7s %8s %9s %8s %8s %8s %9s %9s %10s" % (
        "daemon", "load", "clients", "calls", "calls/s", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs",
        "max µs", "daemon CPU"))
    for period in (0, 10, 100):
        scenario("idle, 1 s", 1.0, 0, clients, seconds, period)
        scenario("50 jobs, 0.1 s", 0.1, 50, clients, seconds, period)


if __name__ == "__main__":
    main(sys.argv[1:])
