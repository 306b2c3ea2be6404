#!/usr/bin/python3
"""Benchmark: the sample store on a large simulated host (issue 13's
targets: at most 10 MB on disk per job-day at 1 s, 10 concurrent jobs not
costing 10 times one, a 24-hour job read as CSV in at most 300 ms).

rt_bench_store generates fixture /proc and /sys trees of a 128-core host
with 16 NVMe disks and 8 interfaces and moves them every simulated second;
8 GPUs come from the fake NVML. The daemon's own collectors read them on a
fake clock and its store keeps one sample per second for a day (86,400;
--quick: 8,640, figures scaled to a day) for 1 job and, in another state
directory, for 10 jobs sampled together. Two profiles: a training node
(most cores flat out, data loader cores partly busy, two disks and two links
streaming, the GPUs busy) and "noisy" (every core, disk and link at random:
what compression cannot reduce).

  tests/bench/bench_store.py [--quick]"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import benchlib as B


def wire_bytes(params):
    return len(json.dumps(params, separators=(",", ":")))


def api_reads(state_dir):
    """Job 1 read through the daemon: as CSV through GetJobSamples (pages
    streamed with "more"): seconds and rows; `report` (GetJobSeries): seconds
    and the bytes of its reply; and what report read before, the samples as
    JSON through GetJobSamples: seconds and bytes (parsed by Python here, not
    by the client's sample parser)."""
    d = B.Daemon(1.0)
    d.state_dir = state_dir
    r = {}
    with d:
        env = dict(os.environ, RESOURCE_TRACKER_SOCKET=d.socket, RESOURCE_TRACKER_KEEPER_URL="off")
        with d.connect(timeout=600) as c:
            c.call("GetJobSamples", {"id": 1, "limit": 1})  # the daemon has loaded its state
            t = time.monotonic()
            rows = sum(pg["csv"].count("\n") for pg in c.stream("GetJobSamples", {"id": 1, "format": "csv"}))
            r["api_csv_secs"], r["rows"] = time.monotonic() - t, rows - 1
            for _ in range(2):  # the second: warm
                t = time.monotonic()
                subprocess.run([B.CTL, "samples", "1", "--format", "csv"], env=env, check=True,
                               stdout=subprocess.DEVNULL)
                r["ctl_csv_secs"] = time.monotonic() - t
            t = time.monotonic()
            subprocess.run([B.CTL, "report", "1", "--history", "0"], env=env, check=True, stdout=subprocess.DEVNULL)
            r["report_secs"] = time.monotonic() - t
            r["series_bytes"] = wire_bytes(c.call("GetJobSeries", {"id": 1}))
            t = time.monotonic()
            r["json_bytes"] = sum(wire_bytes(pg) for pg in c.stream("GetJobSamples", {"id": 1}))
            r["api_json_secs"] = time.monotonic() - t
    return r


def run(samples, noisy):
    tmp = tempfile.mkdtemp(prefix="rt-bench-store-")
    try:
        cmd = [os.path.join(B.TOOLS, "rt_bench_store"), "--dir", tmp, "--samples", str(samples),
               "--nvml", os.path.join(B.BUILD, "tests", "gpu", "fake", "libnvidia-ml.so.1")]
        out = subprocess.run(cmd + (["--noisy"] if noisy else []), check=True, capture_output=True, text=True)
        r = json.loads(out.stdout)
        r.update(api_reads(os.path.join(tmp, "one-job")))
        assert r["rows"] == samples, r["rows"]
        return r
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def mb(n):
    return "%.1f MB" % (n / 1e6)


def main(argv):
    quick = "--quick" in argv
    samples = 8640 if quick else 86400
    B.build("rt_bench_store", "nvml_fake", "resource-trackerd", "resource-trackerctl")
    print("# sample store — %s; %d samples at 1 s (figures per job-day)" % (B.machine(), samples))
    print("%-16s %12s %12s %14s %14s %14s %14s %10s %10s %10s" % (
        "profile", "1 job", "10 jobs", "before, 1 job", "before, 10", "µs/tick 1 job", "µs/tick 10",
        "CSV 24 h", "JSON 24 h", "CSV by API"))
    for noisy in (False, True):
        r = run(samples, noisy)
        scale = 86400.0 / r["samples"]
        print("%-16s %12s %12s %14s %14s %14s %14s %7.0f ms %7.0f ms %7.0f ms" % (
            "noisy" if noisy else "training node", mb(r["one_job_bytes_per_day"]), mb(r["ten_jobs_bytes_per_day"]),
            mb(r["old_one_job_bytes_per_day"]), mb(r["old_ten_jobs_bytes_per_day"]),
            "%.0f (%.0f)" % (r["store_us_per_tick_one_job"], r["old_us_per_tick_one_job"]),
            "%.0f (%.0f)" % (r["store_us_per_tick_ten_jobs"], r["old_us_per_tick_ten_jobs"]),
            r["read_csv_secs"] * scale * 1000, r["read_json_secs"] * scale * 1000, r["api_csv_secs"] * scale * 1000))
        print("  resource-trackerctl samples 1 --format csv, warm: %.2f s a day" % (r["ctl_csv_secs"] * scale))
        print("  report of the day: %.2f s, %.2f MB from the daemon (GetJobSeries); what report read before, "
              "the day as JSON (GetJobSamples): %.0f MB, %.1f s to read it in Python (per day: %.0f MB, %.1f s)"
              % (r["report_secs"], r["series_bytes"] / 1e6, r["json_bytes"] / 1e6, r["api_json_secs"],
                 r["json_bytes"] * scale / 1e6, r["api_json_secs"] * scale))
        sys.stdout.flush()
    print("µs/tick: the store's work per tick (in brackets: making and writing the lines before it); "
          "host sample: %d bytes of JSON; the longest tick of the store (a block sealed): %.0f ms"
          % (r["host_sample_json_bytes"], r["store_max_us_per_tick"] / 1000))


if __name__ == "__main__":
    main(sys.argv[1:])
