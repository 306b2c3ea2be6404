"""rt_hostsample on this machine: samples parse, invariants hold, CSV shape.

Drives the developer entry point against the live /proc and /sys (and once
against the fixture tree, to check the root flags)."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import CSV_HEADER  # noqa: E402

TOOL = os.path.join(os.environ["RT_TOOLS_DIR"], "rt_hostsample")
FIXTURES = os.environ["RT_FIXTURES"]

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)


def run(*args, rc=0):
    p = subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=120)
    if p.returncode != rc:
        sys.exit(f"rt_hostsample {' '.join(args)}: rc {p.returncode} (want {rc})\n{p.stderr}")
    return p.stdout


def meminfo_total_mib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024 // (1 << 20)
    return None


def netdev_names():
    names = set()
    with open("/proc/net/dev") as f:
        for line in f:
            if ":" in line:
                names.add(line.split(":", 1)[0].strip())
    return names - {"lo"}


def root_disk():
    """The whole disk holding / (None when / is not on a block device we report)."""
    st = os.stat("/")
    want = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    for name in os.listdir("/sys/block"):
        if name.startswith(("loop", "ram", "zram")):
            continue
        base = f"/sys/block/{name}"
        candidates = [base] + [f"{base}/{p}" for p in os.listdir(base) if p.startswith(name)]
        for c in candidates:
            try:
                with open(f"{c}/dev") as f:
                    if f.read().strip() == want:
                        return name
            except OSError:
                pass
    return None


def check_sample(i, s):
    where = f"sample {i}"
    cpu = s["cpu"]
    cores = cpu["per_core_pct"]
    check(len(cores) >= 1, f"{where}: no cores")
    check(0 <= cpu["utilization_pct"] <= len(cores), f"{where}: utilization {cpu['utilization_pct']}")
    for c in cores:
        check(0 <= c <= 100, f"{where}: per-core {c}")
    check(cpu["utime_secs"] >= 0 and cpu["stime_secs"] >= 0, f"{where}: negative utime/stime")
    check(cpu["process_count"] > 0, f"{where}: process_count")
    check(cpu["process_cores_used"] is None and s["tracked_pid"] is None, f"{where}: job fields set")

    m = s["memory"]
    check(m["total_mib"] == meminfo_total_mib(), f"{where}: total_mib {m['total_mib']}")
    check(m["used_mib"] + m["available_mib"] <= m["total_mib"], f"{where}: used+available > total")
    check(0 <= m["used_pct"] <= 100, f"{where}: used_pct")
    check(m["swap_used_mib"] <= m["swap_total_mib"], f"{where}: swap")

    names = [d["device"] for d in s["disk"]]
    check(names == sorted(names), f"{where}: disks not sorted {names}")
    for d in s["disk"]:
        check(not d["device"].startswith(("loop", "ram", "zram")), f"{where}: {d['device']} reported")
        check(d["capacity_bytes"] is None or d["capacity_bytes"] > 0, f"{where}: capacity 0")
        check(d["read_bytes_per_sec"] >= 0 and d["write_bytes_per_sec"] >= 0, f"{where}: disk rate < 0")
        check(d["read_bytes_total"] >= 0 and d["write_bytes_total"] >= 0, f"{where}: disk total")
        for mnt in d["mounts"]:
            check(mnt["used_bytes"] + mnt["available_bytes"] <= mnt["total_bytes"],
                  f"{where}: mount {mnt['mount_point']} used+available > total")
            check(not mnt["mount_point"].startswith(("/proc", "/sys", "/dev", "/run")),
                  f"{where}: virtual mount {mnt['mount_point']}")
    rd = root_disk()
    if rd:
        disk = [d for d in s["disk"] if d["device"] == rd]
        check(disk and any(mm["mount_point"] == "/" for mm in disk[0]["mounts"]),
              f"{where}: / not attributed to {rd}")

    ifs = [n["interface"] for n in s["network"]]
    check("lo" not in ifs, f"{where}: lo reported")
    check(ifs == sorted(ifs), f"{where}: interfaces not sorted")
    check(set(ifs) == netdev_names(), f"{where}: interfaces {ifs} vs /proc/net/dev")
    for n in s["network"]:
        check(n["rx_bytes_per_sec"] >= 0 and n["tx_bytes_per_sec"] >= 0, f"{where}: net rate < 0")
        check(n["speed_mbps"] is None or n["speed_mbps"] >= 0, f"{where}: speed {n['speed_mbps']}")
    check(s["gpu"] == [], f"{where}: gpu not empty")


def test_json():
    lines = run("--interval", "0.2", "--count", "5", "--format", "json").splitlines()
    check(len(lines) == 5, f"json: {len(lines)} lines")
    samples = [json.loads(line) for line in lines]
    for i, s in enumerate(samples):
        check(("actual_interval_ms" in s) == (i > 0), f"sample {i}: actual_interval_ms presence")
        if i > 0:
            check(s["actual_interval_ms"] >= 0, f"sample {i}: interval")
            check(s["timestamp_secs"] >= samples[i - 1]["timestamp_secs"], f"sample {i}: time went back")
        check_sample(i, s)


def test_csv():
    lines = run("--interval", "0.1", "--count", "4", "--format", "csv").splitlines()
    check(lines[0] == CSV_HEADER, f"csv header: {lines[0]}")
    check(len(lines[0].split(",")) == 32, "csv header is not 32 columns")
    rows = [line.split(",") for line in lines[1:]]
    check(len(rows) == 4, f"csv: {len(rows)} rows")
    prev = 0
    for i, r in enumerate(rows):
        check(len(r) == 32, f"csv row {i}: {len(r)} fields")
        check(float(r[0]) >= prev, f"csv row {i}: timestamp went back")
        prev = float(r[0])
        for v in r[:21]:
            check(float(v) >= 0, f"csv row {i}: negative {v}")
        check(all(v == "" for v in r[21:]), f"csv row {i}: process columns set")


def test_fixture_roots():
    base = os.path.join(FIXTURES, "host")
    out = run("--proc-root", f"{base}/proc", "--sys-root", f"{base}/sys",
              "--interval", "0.01", "--count", "2")
    s = json.loads(out.splitlines()[-1])
    check([d["device"] for d in s["disk"]] == ["dm-0", "nvme0n1", "sda", "sdb"], "fixture disks")
    check([n["interface"] for n in s["network"]] == ["docker0", "eth0", "eth1"], "fixture interfaces")
    check(s["memory"]["total_mib"] == 16000 and s["cpu"]["process_count"] == 3, "fixture memory/cpu")


def test_bad_usage():
    run("--format", "xml", rc=2)
    run("--interval", "-1", rc=2)
    run("--count", "x", rc=2)
    run("--proc-root", "/nonexistent/proc", rc=1)


test_json()
test_csv()
test_fixture_roots()
test_bad_usage()
if failures:
    sys.exit("FAIL:\n" + "\n".join(failures[:50]))
print("ok")
