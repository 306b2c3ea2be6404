#!/usr/bin/python3
"""Benchmark: what reading one cgroup's figures costs (daemon/cgroup/,
rt_cgroup_read), next to a yardstick measured in the same run: a loop that
only reads the same open files, nothing parsed; and what a tick would cost if
the files were opened each time. Cgroups holding 4 and BENCH_CGROUP_PROCS
(default 1000) sleeping processes, made as the tracker makes them (the v2
tree and the v1 hierarchies where mounted), show that the cost does not
grow with the processes in the cgroup. Root only; the cgroups are removed.

  tests/bench/bench_cgroup.py [--quick]"""

import os
import subprocess
import sys

import benchlib as B


def main(argv):
    if os.geteuid() != 0:
        sys.exit("bench_cgroup: needs root (it makes cgroups)")
    count = 300 if "--quick" in argv else 3000
    big = int(B.env_float("BENCH_CGROUP_PROCS", 1000))
    B.build("rt_bench_cgroup", "rt_cgroup", "rt_bench_procs")
    tool = os.path.join(B.TOOLS, "rt_cgroup")
    mounts = subprocess.run([tool, "mounts"], check=True, capture_output=True, text=True).stdout.strip()
    print("# cgroup read cost — %s; %s" % (B.machine(), mounts))
    paths, procs = [], []
    try:
        for n in (4, big):
            path = "/rt-bench-%d-%d" % (os.getpid(), n)
            subprocess.run([tool, "make", path], check=True)
            paths.append(path)
            # the sleepers start inside the cgroup
            p = subprocess.Popen(["sh", "-c", '"$0" attach "$1" $$ && exec "$2" sleepers "$3"', tool, path,
                                  os.path.join(B.TOOLS, "rt_bench_procs"), str(n)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            procs.append(p)
            if not p.stdout.readline().startswith(b"ready "):
                raise RuntimeError("sleepers did not start")
        out = subprocess.run([os.path.join(B.TOOLS, "rt_bench_cgroup"), "--count", str(count)] + paths,
                             check=True, capture_output=True, text=True).stdout
        print(out, end="")
    finally:
        for p in procs:
            p.stdin.close()
            p.wait(timeout=120)
        for path in paths:
            B.rtlib.wait_for(lambda: subprocess.run([tool, "populated", path], capture_output=True,
                                                    text=True).stdout.strip() == "0", timeout=60,
                             what="the sleepers to leave " + path)
            subprocess.run([tool, "remove", path], check=True)


if __name__ == "__main__":
    main(sys.argv[1:])
