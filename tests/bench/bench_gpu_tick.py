#!/usr/bin/python3
"""Benchmark: what the GPUs cost the daemon per tick, beside what the
driver's own calls cost.

The daemon runs with tests/gpu/nvml_cost.c first on its LD_LIBRARY_PATH: a
libnvidia-ml.so.1 that forwards every call to the real one and counts, per
function, the calls, the calling thread's CPU time and the wall time. The
yardstick is that CPU time: what the driver spends on the daemon's queries,
which no tracker asking the same questions can avoid. Over a window of
BENCH_SECONDS (default 20) at the default interval it prints the daemon's
CPU per tick (all threads, and per thread name), the driver's share of it
per function, and the rest: the daemon's own work.

  tests/bench/bench_gpu_tick.py [--quick] [SCENARIO...]

Scenarios: idle (no process on any GPU), held (a process holds 512 MiB on
GPU 0 and does nothing), busy (a process keeps GPU 0's SMs busy); held and
busy need a real GPU (tests/gpu/cuda_burn). The real library is the one
ldconfig lists; without one, the fake driver (tests/gpu/fake_nvml.c) stands
in with 8 GPUs of 4 processes each, GPM and health counters on: that
measures the daemon's own work for a large host, the driver costing
nothing. BENCH_NVML=PATH names the library; --quick: a 5 s window."""

import os
import struct
import subprocess
import sys
import tempfile
import time

import benchlib as B

SECONDS = B.env_float("BENCH_SECONDS", 20.0)
SETTLE = 5.0
GPU = os.path.join(B.BUILD, "tests", "gpu")
SHIM = os.path.join(GPU, "nvml-cost")
BURN = os.path.join(GPU, "cuda_burn")
FAKE = os.path.join(GPU, "fake", "libnvidia-ml.so.1")
RECORD = struct.Struct("48sQQQ")


def real_nvml():
    if os.environ.get("BENCH_NVML"):
        return os.environ["BENCH_NVML"]
    out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.strip().startswith("libnvidia-ml.so.1 ") and "x86-64" in line:
            return line.split("=>")[1].strip()
    return None


def fake_config(path, pids):
    """8 GPUs of 4 processes each, in the fake's format: one key per line."""
    dev = ("name=Fake-H100", "util=40,60", "mem_total=85899345920", "mem_used=21474836480", "temp=50",
           "power_mw=300000", "clock=1980", "energy_mj=1000", "energy_step_mj=300000", "gpm=1", "gpm_sm=50",
           "gpm_occ=40", "gpm_tensor=20", "gpm_dram=30")
    lines = []
    for i in range(8):
        lines += ["device", "uuid=GPU-bench-%d" % i, "pci=00000000:%02x:00.0" % (i + 1)] + list(dev)
        for pid in pids[4 * i:4 * i + 4]:
            lines += ["process", "pid=%d" % pid, "vram=1073741824", "sm=10"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def counters(path):
    with open(path, "rb") as f:
        data = f.read()
    out = {}
    for off in range(0, len(data) - RECORD.size + 1, RECORD.size):
        name, calls, cpu, wall = RECORD.unpack_from(data, off)
        out[name.rstrip(b"\0").decode()] = (calls, cpu, wall)
    return out


def thread_cpu(pid):
    """{thread name: on-CPU ns}, threads of one name summed."""
    out = {}
    for tid, name in B.tasks(pid).items():
        try:
            out[name] = out.get(name, 0) + B.task_cpu(pid, tid)[0]
        except OSError:
            pass
    return out


def measure(scenario, real, tmp):
    out = os.path.join(tmp, "cost-%s" % scenario)
    env = {"LD_LIBRARY_PATH": SHIM + ":" + os.environ.get("LD_LIBRARY_PATH", ""), "NVML_COST_REAL": real,
           "NVML_COST_OUT": out, "FAKE_NVML_CONFIG": os.path.join(tmp, "fake.conf")}
    load = None
    if scenario != "idle":
        load = subprocess.Popen([BURN, "--mem", "512", "--seconds", str(int(SECONDS + SETTLE + 60))] +
                                (["--busy"] if scenario == "busy" else []), stdout=subprocess.PIPE, text=True)
        if not load.stdout.readline().startswith("ready"):
            raise RuntimeError("cuda_burn did not start")
    d = B.Daemon(1.0)
    d.env.update(env)
    try:
        with d:
            time.sleep(SETTLE)
            c0, n0, t0 = thread_cpu(d.pid), counters(out), time.monotonic()
            time.sleep(SECONDS)
            c1, n1, t1 = thread_cpu(d.pid), counters(out), time.monotonic()
    finally:
        if load:
            load.kill()
            load.wait()
    ticks = (t1 - t0) / d.interval
    threads = {k: (c1[k] - c0.get(k, 0)) / ticks / 1000 for k in c1}
    calls = {k: tuple((a - b) / ticks for a, b in zip(n1[k], n0.get(k, (0, 0, 0)))) for k in n1}
    return ticks, threads, {k: v for k, v in calls.items() if v[0]}


def report(scenario, ticks, threads, calls):
    total = sum(threads.values())
    driver = sum(v[1] for v in calls.values()) / 1000
    print("\n%s: %.0f ticks; daemon CPU %.0f µs per tick, of it in NVML %.0f µs (the yardstick), "
          "the daemon's own %.0f µs" % (scenario, ticks, total, driver, total - driver))
    print("  %-28s %10s" % ("thread", "µs/tick"))
    for k, v in sorted(threads.items(), key=lambda kv: -kv[1]):
        print("  %-28s %10.0f" % (k, v))
    print("  %-44s %9s %11s %11s %11s" % ("NVML function", "calls/tick", "CPU µs/tick", "CPU µs/call",
                                          "wall µs/call"))
    for k, (n, cpu, wall) in sorted(calls.items(), key=lambda kv: -kv[1][1]):
        print("  %-44s %9.1f %11.0f %11.1f %11.1f" % (k, n, cpu / 1000, cpu / n / 1000, wall / n / 1000))


def main():
    if not os.path.exists(os.path.join(SHIM, "libnvidia-ml.so.1")):
        B.build("resource-trackerd", "nvml_cost", "nvml_fake", "cuda_burn")
    global SECONDS
    args = [a for a in sys.argv[1:] if a != "--quick"]
    if len(args) < len(sys.argv) - 1:
        SECONDS = 5.0
    real = real_nvml()
    scenarios = args or (["idle", "held", "busy"] if real else ["idle"])
    print(B.machine())
    with tempfile.TemporaryDirectory(prefix="rt-bench-gpu-") as tmp:
        if not real:
            real = FAKE
            with B.sleepers(32) as procs:
                fake_config(os.path.join(tmp, "fake.conf"), B.children(procs.pid))
                print("no NVIDIA driver here: the fake one, 8 GPUs of 4 processes each\nNVML: %s" % real)
                report("idle", *measure("idle", real, tmp))
            return
        print("NVML: %s" % real)
        for s in scenarios:
            report(s, *measure(s, real, tmp))


if __name__ == "__main__":
    main()
