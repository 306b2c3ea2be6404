"""Drives tests/tools/upload_driver (the upload worker as the daemon uses it)."""
import gzip
import json
import os
import select
import signal
import subprocess
import time

TOOLS = os.environ.get("RT_TOOLS_DIR", "")
HEADER = ("timestamp,system_processes,system_utime,system_stime,system_cpu_usage,system_memory_free_mib,"
          "system_memory_used_mib,system_memory_buffers_mib,system_memory_cached_mib,system_memory_active_mib,"
          "system_memory_inactive_mib,system_disk_read_bytes,system_disk_write_bytes,system_disk_space_total_gb,"
          "system_disk_space_used_gb,system_disk_space_free_gb,system_net_recv_bytes,system_net_sent_bytes,"
          "system_gpu_usage,system_gpu_vram_mib,system_gpu_utilized,process_pid,process_children,process_utime,"
          "process_stime,process_cpu_usage,process_memory_mib,process_disk_read_bytes,process_disk_write_bytes,"
          "process_gpu_usage,process_gpu_vram_mib,process_gpu_utilized")


def make_rows(job, n, start=0):
    """n distinct 32-column rows, as rt_sample_to_csv writes them."""
    rows = []
    for i in range(start, start + n):
        ts = 1767225600 + job * 100000 + i
        rows.append(f"{ts},{300 + i % 7},0.{i % 1000:03d},0.120,1.{i % 10000:04d},20480,{3000 + i},210,8000,"
                    f"5000,6000,{i * 512},4096,250.000000,120.000000,130.000000,{i * 100},800,0.0000,0.0000,0,"
                    f"4242,{i % 5},0.4100,0.0300,0.4400,512,0,4096,0.0000,0.0000,0")
    assert all(r.count(",") == 31 for r in rows)
    return rows


def wait_until(pred, timeout=60, what="condition", interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class Driver:
    def __init__(self, spool, api, log, **opts):
        args = [os.path.join(TOOLS, "upload_driver"), "--spool", spool, "--api", api]
        for k, v in opts.items():
            if v is not None:
                args += ["--" + k.replace("_", "-"), str(v)]
        self.log_path = log
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)
        assert self.reply(30).get("ready"), "driver did not start"

    def reply(self, timeout=60):
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not r:
            raise AssertionError("driver did not answer")
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"driver exited (rc={self.proc.wait()}); log {self.log_path}")
        return json.loads(line)

    def cmd(self, line, timeout=60):
        self.proc.stdin.write((line + "\n").encode())
        self.proc.stdin.flush()
        return self.reply(timeout)

    def begin(self, job, token, fields):
        return self.cmd(f"begin {job} {token or '-'} {json.dumps(fields)}")

    def rows(self, job, rows, pace=0.0):
        for r in rows:
            self.cmd(f"row {job} {r}")
            if pace:
                time.sleep(pace)

    def status(self, job):
        return self.cmd(f"status {job}")

    def end(self, job, code=0):
        return self.cmd(f"end {job} {code}")

    def exit(self, job, code):
        """A late exit status for a job that ended without one (end job -1)."""
        return self.cmd(f"exit {job} {code}")

    def quit(self, timeout=60):
        """Clean exit; returns the exit code (ASan/LSan reports make it non-zero)."""
        self.proc.stdin.write(b"quit\n")
        self.proc.stdin.close()
        rc = self.proc.wait(timeout)
        self.proc.stdout.close()
        self.log.close()
        return rc

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()
        self.log.close()

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")


def object_rows(data):
    """Un-gzip one object: (header line, rows)."""
    text = gzip.decompress(data).decode()
    assert text.endswith("\n"), "object does not end with a newline"
    lines = text[:-1].split("\n")
    return lines[0], lines[1:]
