#!/usr/bin/python3
"""StreamJobs subscribers in a process of their own (so that reading them does
not hold the GIL of the process that measures another client's latency).

  subscribers.py SOCKET READING IDLE [PARAMS_JSON]

Opens READING + IDLE connections, each calling StreamJobs with `more` (and
PARAMS, default {"all": true}). READING ones read and discard every reply;
IDLE ones never read. Prints "ready" once every reader has its first reply,
runs until stdin closes, then prints one JSON line: replies read, bytes read,
readers the daemon closed, and the number of jobs in each reply the first
reader got after its first. Imported, it gives Subscribers (that process, for a
with block) and ping_latencies (another client's Ping round trips). Used by
tests/integration/test_stream_load.py and tests/bench/bench_stream_load.py."""

import json
import os
import select
import socket
import subprocess
import sys
import threading
import time

IFACE = "com.sparecores.ResourceTracker"


class Subscribers:
    """The subscribers' process for a with block; .result after it."""

    def __init__(self, path, reading, idle, params=None):
        self.args = [sys.executable, "-B", os.path.abspath(__file__), path, str(reading), str(idle)]
        if params is not None:
            self.args.append(json.dumps(params))
        self.result = None

    def __enter__(self):
        self.p = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if line.strip() != "ready":
            self.p.kill()
            self.p.wait()
            raise RuntimeError("the subscribers did not get their first replies: %r" % line)
        return self

    def __exit__(self, *a):
        self.p.stdin.close()
        out = self.p.stdout.read()
        self.p.stdout.close()
        self.p.wait(timeout=60)
        self.result = json.loads(out) if out.strip() else None


def ping_latencies(path, seconds, pause=0.005):
    """Ping round trips (seconds, sorted) of one client calling every pause s."""
    msg = json.dumps({"method": IFACE + ".Ping"}).encode() + b"\0"
    out = []
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(30)
        s.connect(path)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            s.sendall(msg)
            buf = b""
            while not buf.endswith(b"\0"):
                data = s.recv(4096)
                if not data:
                    raise RuntimeError("the daemon closed the Ping connection")
                buf += data
            out.append(time.perf_counter() - t0)
            if b'"error"' in buf:
                raise RuntimeError("Ping failed: %r" % buf)
            time.sleep(pause)
    return sorted(out)


def percentile(sorted_vals, p):
    return sorted_vals[min(len(sorted_vals) - 1, int(round((len(sorted_vals) - 1) * p)))]


def main(argv):
    path, reading, idle = argv[0], int(argv[1]), int(argv[2])
    params = json.loads(argv[3]) if len(argv) > 3 else {"all": True}
    call = json.dumps({"method": IFACE + ".StreamJobs", "parameters": params, "more": True}).encode() + b"\0"
    readers, idlers = [], []
    for i in range(reading + idle):
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        s.sendall(call)
        (readers if i < reading else idlers).append(s)
        # One at a time, each reader's first reply read: 200 first replies of
        # 500 KB at once would be over root's limits.max_buffer_per_user.
        data = b"" if i < reading else b"\0"
        while not data.endswith(b"\0"):
            data = s.recv(1 << 20)
            if not data:
                sys.exit("subscriber %d: closed before its first reply" % i)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    print("ready", flush=True)
    replies, nbytes, closed = len(readers), 0, 0
    live = list(readers)
    first, jobs_seen = b"", []  # the first reader's bytes since its last reply; jobs in its replies
    while not stop.is_set():
        ready, _, _ = select.select(live, [], [], 0.1)
        for s in ready:
            data = s.recv(1 << 20)
            if not data:
                live.remove(s)
                closed += 1
                continue
            nbytes += len(data)
            replies += data.count(b"\0")
            if s is readers[0]:
                *done, first = (first + data).split(b"\0")
                jobs_seen += [len(json.loads(m)["parameters"]["jobs"]) for m in done]
    print(json.dumps({"replies": replies, "bytes": nbytes, "closed": closed, "jobs_seen": jobs_seen}), flush=True)
    for s in readers + idlers:
        s.close()


if __name__ == "__main__":
    main(sys.argv[1:])
