#!/usr/bin/python3
"""Benchmark: `resource-trackerctl report` and `recommend` of a day-long job
(86,400 samples at 1 s), alone and with 5 earlier runs of the same name: wall
time, the client's CPU, the daemon's CPU while it serves the samples, and
the size of the HTML file. The jobs are written straight into a state
directory (tests/integration/synthjob.py) that the daemon loads, so nothing
waits a day. --quick: 20,000 samples, 2 earlier runs.

  tests/bench/bench_report.py [--quick]"""

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import benchlib as B

sys.path.insert(0, os.path.join(B.ROOT, "tests", "integration"))
import synthjob  # noqa: E402


def proc_cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / B.CLK_TCK


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def kept_as_text(path):
    with open(path) as f:
        lines = [json.loads(l) for l in f]
    with open(path, "w") as f:
        for line in lines:
            line["timestamp_ms"] = 1000
            f.write(json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n")


def main(argv):
    quick = "--quick" in argv
    n = 20000 if quick else 86400
    runs = 3 if quick else 6
    B.build("resource-trackerd", "resource-trackerctl")
    with B.Daemon(1.0) as probe:
        host = probe.call("GetHostSample")["sample"]
    state = tempfile.mkdtemp(prefix="rt-bench-report-")
    try:
        t = time.monotonic()
        for i in range(1, runs + 1):
            synthjob.write_job(state, host, n, job_id=i, name="day", end=time.time() - (runs - i) * n)
        # One more day whose lines the store cannot rebuild (a timestamp_ms that is not
        # its second's, as synthjob wrote them before): kept as they were.
        synthjob.write_job(state, host, n, job_id=runs + 1, name="verbatim", end=time.time())
        kept_as_text(os.path.join(state, "jobs", str(runs + 1), "samples.jsonl"))
        B.log("wrote %d jobs of %d samples in %.1f s" % (runs, n, time.monotonic() - t))
        print("# report and recommend of a %d-sample job (1 s interval) — %s" % (n, B.machine()))
        print("%-34s %8s %10s %11s %9s" % ("", "wall s", "ctl CPU s", "daemon CPU s", "HTML KiB"))
        d = B.Daemon(1.0)
        d.state_dir = state
        # Cloud discovery asks a closed port on loopback, not the network.
        d.env.update(RESOURCE_TRACKERD_TEST_IMDS_BASE="http://127.0.0.1:9",
                     RESOURCE_TRACKERD_TEST_ALICLOUD_BASE="http://127.0.0.1:9")
        with d:
            env = dict(os.environ, RESOURCE_TRACKER_SOCKET=d.socket, RESOURCE_TRACKER_KEEPER_URL="off")
            for label, args in (("report, no history", ["report", str(runs), "--history", "0"]),
                                ("report, %d earlier runs" % (runs - 1), ["report", str(runs)]),
                                ("recommend, no history", ["recommend", str(runs), "--history", "0"]),
                                ("recommend, %d earlier runs" % (runs - 1), ["recommend", str(runs)])):
                before = child_cpu()
                d_before = proc_cpu(d.pid)
                t = time.monotonic()
                p = subprocess.run([B.CTL] + args, env=env, capture_output=True, check=True)
                wall = time.monotonic() - t
                size = "%9.0f" % (len(p.stdout) / 1024) if args[0] == "report" else "%9s" % "-"
                print("%-34s %8.2f %10.2f %11.2f %s" % (label, wall, child_cpu() - before,
                                                        proc_cpu(d.pid) - d_before, size))
            for label, job in (("samples --format csv, migrated", runs),
                               ("  the same, lines kept as text", runs + 1)):
                before = child_cpu()
                d_before = proc_cpu(d.pid)
                t = time.monotonic()
                subprocess.run([B.CTL, "samples", str(job), "--format", "csv"], env=env, check=True,
                               stdout=subprocess.DEVNULL)
                print("%-34s %8.2f %10.2f %11.2f" % (label, time.monotonic() - t, child_cpu() - before,
                                                     proc_cpu(d.pid) - d_before))
    finally:
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
