#!/usr/bin/env python3
"""Write the seed inputs of the fuzz targets into tests/fuzz/corpus/TARGET/
(seed-*; inputs of crashes found are added there by hand, named crash-*).

  seeds.py [STATE_DIR [NAME]]

The request and config seeds are written from this script; the procfs seeds
from this machine's /proc and /sys (one process's files as PID 1 and 42);
the cgroup seeds from the fixture trees of tests/fixtures/cgroup (a host's
mountinfo and cgroup files, a process's /proc/PID/cgroup as PID 1 and 42);
the state seeds from STATE_DIR, a daemon's state directory (stop the daemon,
or kill it for files as a crash leaves them), when given: seed-NAME (default
"daemon") and seed-NAME-jobs-only ("jobs-only" for "daemon"). The seeds
"daemon" and "jobs-only" are a state directory from before the sample store
(jobs/ID/job.json and samples.jsonl: what the store migrates); "store" is
that directory after a daemon migrated it, ran two more jobs and was killed
with one running (host/, jobs/ID/fig-*, metadata.json); "specials" is "store"
with FIFOs and symbolic links in place of some of its files and a job
directory (fuzz_tree.h: content NUL 'F', NUL 'L' K). Records are fuzz_tree.h's: a byte N, N bytes of a path,
two bytes of length (little-endian), the content."""

import json
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
IFACE = "com.sparecores.ResourceTracker"


def rec(name, content):
    name = name.encode()
    content = content if isinstance(content, bytes) else content.encode()
    content = content[:65535]
    return bytes([len(name)]) + name + struct.pack("<H", len(content)) + content


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def call(method, params=None, **flags):
    m = {"method": method if "." in method else IFACE + "." + method}
    if params is not None:
        m["parameters"] = params
    m.update(flags)
    return json.dumps(m).encode() + b"\0"


def request_seeds():
    # First byte: bit 0 a descriptor sent along, bit 1 half-close after.
    calls = {
        "ping": call("Ping"),
        "info": call("Info") + call("org.varlink.service.GetInfo"),
        "describe": call("org.varlink.service.GetInterfaceDescription", {"interface": IFACE}),
        "list": call("ListJobs") + call("ListJobs", {"limit": 1, "before_id": 3, "name": "eval"}),
        "list_filters": call("ListJobs", {"running_only": True, "owner_uid": 4242, "since": 1500.5}),
        "get": call("GetJob", {"id": 1}) + call("GetJob", {"name": "eval"}),
        "samples": call("GetJobSamples", {"id": 3, "offset": 2, "limit": 4}),
        "samples_csv": call("GetJobSamples", {"id": 2, "format": "csv"}, more=True),
        "samples_follow": call("GetJobSamples", {"id": 1, "follow": True}, more=True),
        "host": call("GetHostSample") + call("StreamHostSamples", more=True),
        "jobs_stream": call("StreamJobs", {"all": True}, more=True),
        "start": call("StartJob", {"pid": 1, "name": "x", "interval_secs": 0.5,
                                   "metadata": {"project_name": "p", "tags": ["a=b"]}}),
        "start_pidfd": call("StartJob", {"pid": 1, "pidfd": 0}),
        "finish": call("FinishJob", {"id": 1, "exit_code": 3}) + call("Ping"),
        "stop": call("StopJob", {"id": 2}) + call("StopJob", {"name": "nope"}),
        "oneway": call("Ping", oneway=True) + call("Info", oneway=True) + call("Ping"),
        "bad": b'{"method":"' + IFACE.encode() + b'.Ping","parameters":{"x":[1,2,{"y":null}]}}\0' +
               b"[1]\0{\0",
        "partial": b'{"method":"' + IFACE.encode() + b'.Ping","param',
    }
    for i, (name, data) in enumerate(sorted(calls.items())):
        write("request", name, bytes([i % 4]) + data)


def config_seeds():
    with open(os.path.join(HERE, "..", "..", "etc", "resource-trackerd.conf")) as f:
        sample = f.read()
    uncommented = "\n".join(ln.replace("#", "", 1) if ln.lstrip().startswith("#") and "=" in ln else ln
                            for ln in sample.splitlines())
    write("config", "sample", sample.encode())
    write("config", "sample-set", uncommented.encode())
    write("config", "limits", b'limits: {\n  max_connections = 100;\n  reserved_connections = 4;\n'
                              b'  max_buffer_per_user = "8M";\n  idle_timeout = "5min";\n};\n')
    write("config", "units", b'interval = "500ms";\nretention: { max_age = "1w"; max_size = "2G"; };\n'
                             b'upload: { interval = 3600.0; api_url = ""; s3_region = "eu-west-1"; };\n')


def procfs_seeds():
    pid = os.getpid()
    files = {}
    for name in ("stat", "io", "status", "smaps_rollup"):
        with open("/proc/%d/%s" % (pid, name), "rb") as f:
            files[name] = f.read()
    child = b"42"
    one = [rec("proc/1/" + n, c) for n, c in files.items()] + [rec("proc/1/task/1/children", child)]
    kid = [rec("proc/42/" + n, c.replace(b"%d (" % pid, b"42 (", 1)) for n, c in files.items()]
    write("procfs", "pid1", b"".join(one))
    write("procfs", "tree", b"".join(one + kid))
    for path in ("stat", "meminfo", "diskstats", "net/dev", "self/mountinfo"):
        with open("/proc/" + path, "rb") as f:
            write("procfs", "host-" + path.replace("/", "-"), rec("proc/" + path, f.read()))


def cgroup_seeds():
    fixtures = os.path.join(HERE, "..", "fixtures", "cgroup")
    pids = {"hybrid": ("300", "301"), "v2": ("100", "101"), "v1": ("500", "500")}
    for host, (one, other) in pids.items():
        out = []
        for root, _, names in os.walk(os.path.join(fixtures, host)):
            for n in sorted(names):
                full = os.path.join(root, n)
                rel = os.path.relpath(full, os.path.join(fixtures, host))
                # fuzz_tree.h's paths: [A-Za-z0-9._-/], at most 8 levels
                if not re.fullmatch(r"[A-Za-z0-9._/-]+", rel) or rel.count("/") >= 8:
                    continue
                rel = re.sub(r"^proc/%s/" % one, "proc/1/", re.sub(r"^proc/%s/" % other, "proc/42/", rel))
                with open(full, "rb") as f:
                    out.append(rec(rel, f.read()))
        if host == "v2":  # docker's state of the container "web"
            for root, _, names in os.walk(os.path.join(fixtures, "state", "var")):
                for n in names:
                    full = os.path.join(root, n)
                    with open(full, "rb") as f:
                        out.append(rec(os.path.relpath(full, os.path.join(fixtures, "state")), f.read()))
        write("procfs", "cgroup-" + host, b"".join(out))


def slurm_seeds():
    # Slurm jobs' processes and cgroups: the fixture trees of test_slurm_facts.
    fixtures = os.path.join(HERE, "..", "fixtures", "slurm")
    for layout in ("v1", "v2"):
        out = []
        top = os.path.join(fixtures, layout)
        for root, _, names in sorted(os.walk(top)):
            for n in sorted(names):
                full = os.path.join(root, n)
                rel = os.path.relpath(full, top)
                if rel.count("/") >= 8:  # fuzz_tree.h's paths: at most 8 levels
                    continue
                with open(full, "rb") as f:
                    out.append(rec(rel, f.read()))
        write("procfs", "slurm-" + layout, b"".join(out))


def state_seeds(state, name="daemon"):
    out = []
    for root, _, names in os.walk(state):
        for n in sorted(names):
            full = os.path.join(root, n)
            rel = os.path.relpath(full, state)
            with open(full, "rb") as f:
                out.append(rec(rel, f.read()))
    write("state", name, b"".join(out))
    jobs = [r for r in out if b"jobs/" in r[:40]]
    write("state", "jobs-only" if name == "daemon" else name + "-jobs-only", b"".join(jobs))


def special_seeds():
    with open(os.path.join(HERE, "corpus", "state", "seed-store"), "rb") as f:
        data = f.read()
    fifo, link = b"\0F", lambda k: b"\0L" + bytes([k])
    # The running job's metadata and an ended one's out of the tree, a
    # record, the id counter and the host's hot file as FIFOs, a job
    # directory and a sealed block as links.
    swap = {"jobs/4/metadata.json": link(0), "jobs/1/metadata.json": link(0), "jobs/3/job.json": fifo,
            "last-id": fifo, "host/16.hot": fifo, "jobs/2/fig-0.z": link(2)}
    out, i = [], 0
    while i < len(data):
        n = data[i]
        name = data[i + 1:i + 1 + n].decode()
        (length,) = struct.unpack("<H", data[i + 1 + n:i + 3 + n])
        out.append(rec(name, swap.get(name, data[i + 3 + n:i + 3 + n + length])))
        i += 3 + n + length
    out += [rec("jobs/5", link(1)), rec("jobs/6/job.json", link(3)), rec("jobs/7/fig-0.hot", fifo)]
    write("state", "specials", b"".join(out))


if __name__ == "__main__":
    request_seeds()
    config_seeds()
    procfs_seeds()
    cgroup_seeds()
    slurm_seeds()
    special_seeds()
    if len(sys.argv) > 1:
        state_seeds(*sys.argv[1:3])
