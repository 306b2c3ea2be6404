#!/usr/bin/python3
"""The GPU paths against a real NVIDIA driver, for a machine with a GPU (run
as root from the top of the tree, with a build directory; no CUDA toolkit
needed):

    tests/gpu/real_gpu_check.py [BUILD_DIR]      # default build-rel

It starts the daemon on a private socket, then
  1. holds memory on GPU 0 from a process in no job, doing nothing
     (cuda_burn: the CUDA driver API through dlopen("libcuda.so.1") and a PTX
     kernel the driver compiles), and checks GetGpus against nvidia-smi: the
     GPUs, the process and its memory; then that GPU 0 is flagged idle but
     held after gpu.idle_after (5 s here);
  2. runs a busy kernel as a job with `run --gpus 1`, and checks the job's
     GPU, its use (GetGpus, the job's summary) against nvidia-smi, GPM where
     the card has it, and that the busy GPU is not flagged idle.
Each check prints PASS or FAIL; the results, as a Markdown table for
docs/gpu.md, go to stdout and to $OUT/results.md when $OUT is set. Exit
status 0 when every check passed, 1 otherwise, 2 when the machine cannot run
it (no GPU, no driver, no build)."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build-rel"))
DAEMON = os.path.join(BUILD, "daemon", "resource-trackerd")
CTL = os.path.join(BUILD, "ctl", "resource-trackerctl")
BURN = os.path.join(BUILD, "tests", "gpu", "cuda_burn")
IDLE_AFTER = 5
results = []


def check(name, ok, detail=""):
    results.append((name, "PASS" if ok else "FAIL", detail))
    print("%s  %s  %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)
    return ok


def smi(*query):
    out = subprocess.run(["nvidia-smi"] + list(query), capture_output=True, text=True, timeout=30)
    return out.stdout


def smi_csv(kind, fields):
    text = smi("--query-%s=%s" % (kind, fields), "--format=csv,noheader,nounits")
    return [[c.strip() for c in line.split(",")] for line in text.strip().splitlines() if line.strip()]


def call(sock, method, params=None):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(sock)
    s.sendall(json.dumps({"method": "com.sparecores.ResourceTracker." + method,
                          "parameters": params or {}}).encode() + b"\0")
    buf = b""
    while not buf.endswith(b"\0"):
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        buf += chunk
    s.close()
    reply = json.loads(buf.rstrip(b"\0"))
    if "error" in reply:
        raise RuntimeError("%s: %s" % (method, reply["error"]))
    return reply.get("parameters", {})


def wait(pred, timeout=30, step=0.5):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return None


def main():
    for path in (DAEMON, CTL, BURN):
        if not os.path.exists(path):
            print("missing %s: build first (cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release)" % path)
            return 2
    if not shutil.which("nvidia-smi") or not smi("-L").strip():
        print("no NVIDIA GPU here (nvidia-smi -L lists none)")
        return 2
    gpus_smi = smi_csv("gpu", "index,uuid,name,memory.total,driver_version")
    tmp = tempfile.mkdtemp(prefix="rt-real-gpu-")
    sock = os.path.join(tmp, "rt.sock")
    conf = os.path.join(tmp, "rt.conf")
    with open(conf, "w") as f:
        f.write('gpu: { idle_after = "%ds"; idle_util_max = 5; idle_vram_min = "64M"; };\n' % IDLE_AFTER)
    log = open(os.path.join(tmp, "daemon.log"), "w")
    daemon = subprocess.Popen([DAEMON, "--config", conf, "--socket", sock, "--state-dir", os.path.join(tmp, "state"),
                               "--interval", "1", "--log-target", "stderr"], stdout=log, stderr=log)
    procs = [daemon]
    try:
        if not wait(lambda: os.path.exists(sock) and call(sock, "GetGpus")["gpus"], timeout=60):
            print("the daemon did not list GPUs; its log:\n" + open(log.name).read())
            return 2
        t0 = time.time()
        g = call(sock, "GetGpus")
        check("GetGpus answers", True, "%.1f ms" % ((time.time() - t0) * 1000))
        ours = {x["uuid"]: x for x in g["gpus"]}
        check("every GPU of nvidia-smi, by UUID", sorted(ours) == sorted(r[1] for r in gpus_smi),
              "%d GPU(s): %s, driver %s" % (len(gpus_smi), gpus_smi[0][2], gpus_smi[0][4]))
        for r in gpus_smi:
            mine = ours.get(r[1])
            check("GPU %s memory total" % r[0], mine and abs(mine["vram_total_bytes"] / 2**20 - float(r[3])) <= 1,
                  "%s MiB" % r[3])

        # 1. memory held, nothing done, in no job
        idle = subprocess.Popen([BURN, "--mem", "512", "--seconds", "120", "--device", "0"], stdout=subprocess.PIPE,
                                text=True)
        procs.append(idle)
        line = idle.stdout.readline()
        check("cuda_burn holds memory (idle)", line.startswith("ready"), line.strip())
        uuid0 = gpus_smi[0][1]

        def our_proc():
            x = [p for gg in call(sock, "GetGpus")["gpus"] if gg["uuid"] == uuid0 for p in gg["processes"] or []
                 if p["pid"] == idle.pid]
            return x[0] if x else None
        p = wait(our_proc, timeout=20)
        apps = {int(a[0]): float(a[1]) for a in smi_csv("compute-apps", "pid,used_memory") if a[0].isdigit()}
        check("the idle process listed, with its user", p is not None and p["uid"] == os.getuid(), str(p))
        if p and idle.pid in apps:
            check("its memory as nvidia-smi says", abs(p["vram_bytes"] / 2**20 - apps[idle.pid]) <= 2,
                  "ours %.0f MiB, nvidia-smi %.0f MiB" % (p["vram_bytes"] / 2**20, apps[idle.pid]))
        flagged = wait(lambda: [gg for gg in call(sock, "GetGpus")["gpus"] if gg["uuid"] == uuid0 and gg["idle"]],
                       timeout=IDLE_AFTER + 20)
        busy_others = float(smi_csv("gpu", "utilization.gpu")[0][0]) > 5
        check("GPU 0 flagged idle but held after %d s" % IDLE_AFTER, bool(flagged) or busy_others,
              "" if flagged else "GPU 0 is busy with other work (%s %%): not judged" % smi_csv("gpu",
                                                                                              "utilization.gpu")[0][0])

        # 2. a busy job on the GPU run --gpus gives it
        # stderr apart: with one GPU, held by the idle process, run warns that none is free
        job_out, job_err = os.path.join(tmp, "job.out"), os.path.join(tmp, "job.err")
        env = dict(os.environ, RESOURCE_TRACKER_SOCKET=sock)
        with open(job_out, "w") as out, open(job_err, "w") as err:
            run = subprocess.Popen([CTL, "run", "-q", "--gpus", "1", "-n", "burn", "--", "sh", "-c",
                                    'echo "$CUDA_VISIBLE_DEVICES"; exec %s --busy --seconds 25 --mem 256' % BURN],
                                   env=env, stdout=out, stderr=err)
        procs.append(run)
        time.sleep(12)
        with open(job_out) as f:
            given = f.readline().strip()
        with open(job_err) as f:
            warned = f.read().strip()
        check("run --gpus 1 sets CUDA_VISIBLE_DEVICES", given in ours, given + (" (" + warned + ")" if warned else ""))
        gg = [x for x in call(sock, "GetGpus")["gpus"] if x["uuid"] == given]
        util_smi = {r[0]: float(r[1]) for r in smi_csv("gpu", "uuid,utilization.gpu")}
        power_smi = {r[0]: float(r[1]) for r in smi_csv("gpu", "uuid,power.draw")}
        if gg:
            x = gg[0]
            check("its use as nvidia-smi says", abs((x["utilization_pct"] or 0) - util_smi.get(given, -100)) <= 15,
                  "ours %s %%, nvidia-smi %s %%" % (x["utilization_pct"], util_smi.get(given)))
            check("the busy GPU is not idle", x["idle"] is False, str(x["idle"]))
            jp = [q for q in x["processes"] or [] if q["job_id"]]
            check("the job's process on it, in the job", bool(jp), str(jp[:1]))
            if jp and jp[0]["sm_pct"] is not None:
                check("its SM share", jp[0]["sm_pct"] > 30, "%.0f %%" % jp[0]["sm_pct"])
            if x["gpm"]:
                check("GPM SM activity (Hopper and later)", x["gpm"]["sm_active_pct"] > 20,
                      json.dumps(x["gpm"]))
            else:
                check("GPM: none on this card (null, not 0)", x["gpm"] is None)
            check("busy but stalled: no", x["busy_but_stalled"] in (False, None), str(x["busy_but_stalled"]))
        run.wait(timeout=60)
        job = call(sock, "GetJob", {"name": "burn"})["job"]
        s = job["summary"]
        check("the job's GPU use", (s["gpu_avg_usage"] or 0) > 0.3 and s["gpu_avg_held"] > 0.5,
              "%.2f GPUs busy on average, %.2f held" % (s["gpu_avg_usage"] or 0, s["gpu_avg_held"] or 0))
        # the only process using its GPU: all of the GPU's energy, about its power x its time
        watts = (s["gpu_energy_joules"] or 0) / s["duration_secs"]
        check("the job's energy, against nvidia-smi's power", 0.7 <= watts / power_smi.get(given, 1e9) <= 1.3,
              "%.0f J in %.1f s: %.0f W; nvidia-smi %.0f W" % (s["gpu_energy_joules"] or 0, s["duration_secs"], watts,
                                                           power_smi.get(given, 0)))
        check("the job's GPU health figures", s["gpu_xid_errors"] in (0, None),
              "XID %s, ECC %s, clocks held %s" % (s["gpu_xid_errors"], s["gpu_ecc_errors"], s["gpu_clocks_held"]))
        usage = call(sock, "GetUsage", {"by": "job"})["rows"]
        check("usage covers the job and the process in no job",
              any(r["untracked"] and r["gpu_held_secs"] > 10 for r in usage) and
              any(r["job_id"] == job["id"] for r in usage), "%d rows" % len(usage))
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
        log.close()
    table = ["| check | result | detail |", "|---|---|---|"]
    table += ["| %s | %s | %s |" % r for r in results]
    text = "\n".join(table) + "\n"
    print("\n" + text)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "results.md"), "w") as f:
            f.write(text)
        shutil.copy(os.path.join(tmp, "daemon.log"), os.path.join(os.environ["OUT"], "daemon.log"))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0 if all(r[1] == "PASS" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
