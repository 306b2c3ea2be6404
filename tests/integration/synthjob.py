"""A long finished job written straight into a daemon's state directory
(the store format of daemon/jobs/store.h), for tests and benchmarks that
need more samples than they can wait for: a day at 1 s in seconds. Totals
are left for the daemon to rebuild from the samples when it loads them."""

import json
import math
import os
import random
import time

# The job's tree: what every generated sample says of it.
PEAK_EVERY = 5000        # one sample in PEAK_EVERY is a CPU peak of PEAK_CORES
PEAK_AT = 1234
PEAK_CORES = 7.9


def cores(n, job_id=1):
    """The job's cores in each of its n samples: a slow wave with noise, and its peaks."""
    rnd = random.Random(job_id)
    for i in range(n):
        c = round(1.5 + math.sin(i / 600.0) + rnd.random() * 0.2, 4)
        yield PEAK_CORES if i % PEAK_EVERY == PEAK_AT else c


def write_job(state_dir, host_sample, n, interval=1.0, job_id=1, name="day", uid=0, end=None):
    """A finished job of n samples ending at `end` (now by default), built
    from host_sample (a GetHostSample sample). Returns the job's cores per
    sample (index -> cores) of the peaks, for checks."""
    end = end or time.time()
    start = end - n * interval
    jd = os.path.join(state_dir, "jobs", str(job_id))
    os.makedirs(jd, exist_ok=True)
    with open(os.path.join(state_dir, "last-id"), "w") as f:
        f.write("%d\n" % job_id)
    record = {"id": job_id, "name": name, "owner_uid": uid, "pid": 4242, "state": "finished",
              "started_at": start, "ended_at": end, "exit_code": 0, "signal": None,
              "interval_secs": interval, "metadata": {"command": ["train", "--epochs", "90"]},
              "starttime": 1, "totals": {"samples": 0}, "wants_upload": False}
    with open(os.path.join(jd, "job.json"), "w") as f:
        json.dump(record, f)
    base = dict(host_sample, job_id=job_id, job_name=name, tracked_pid=4242,
                actual_interval_ms=int(interval * 1000))
    base.pop("host_timestamp_ms", None)  # an older daemon's lines have none
    cpu = dict(base["cpu"], process_child_count=3, process_gpu_usage=None, process_gpu_vram_mib=None,
               process_gpu_utilized=None)
    peaks = {}
    with open(os.path.join(jd, "samples.jsonl"), "w") as f:
        for i, c in enumerate(cores(n, job_id)):
            if i % PEAK_EVERY == PEAK_AT:
                peaks[i] = c
            cpu.update(process_cores_used=c,
                       process_utime_secs=round(c * interval * 0.9, 4),
                       process_stime_secs=round(c * interval * 0.1, 4),
                       process_pss_mib=2000 + i // 100, process_rss_mib=2100 + i // 100,
                       process_disk_read_bytes=4096 * (i % 7), process_disk_write_bytes=8192 * (i % 3),
                       utilization_pct=round(c + 0.3, 2))
            base["cpu"] = cpu
            # As the daemon writes them: timestamp_ms, and its whole second.
            base["timestamp_ms"] = int((start + (i + 1) * interval) * 1000)
            base["timestamp_secs"] = base["timestamp_ms"] // 1000
            f.write(json.dumps(base, sort_keys=True, separators=(",", ":")) + "\n")
    return peaks
