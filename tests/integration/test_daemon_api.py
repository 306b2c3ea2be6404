"""Every method of com.sparecores.ResourceTracker and org.varlink.service
against a real daemon and real processes."""

import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import CSV_HEADER, IFACE, DaemonTest, VarlinkError, wait_for  # noqa: E402



def starttime(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


class ServiceInterface(DaemonTest):
    def test_get_info(self):
        info = self.d.call("org.varlink.service.GetInfo")
        self.assertEqual(info["product"], "resource-trackerd")
        self.assertIn(IFACE, info["interfaces"])
        self.assertIn("org.varlink.service", info["interfaces"])

    def test_interface_description(self):
        desc = self.d.call("org.varlink.service.GetInterfaceDescription", {"interface": IFACE})
        with open(os.path.join(os.environ["RT_SOURCE_DIR"], "daemon", "api", IFACE + ".varlink")) as f:
            self.assertEqual(desc["description"], f.read())
        svc = self.d.call("org.varlink.service.GetInterfaceDescription", {"interface": "org.varlink.service"})
        self.assertIn("interface org.varlink.service", svc["description"])
        with self.assertRaises(VarlinkError) as e:
            self.d.call("org.varlink.service.GetInterfaceDescription", {"interface": "no.such"})
        self.assertEqual(e.exception.error, "org.varlink.service.InterfaceNotFound")


class HostMethods(DaemonTest):
    def test_ping_info(self):
        self.assertEqual(self.d.call("Ping"), {})
        info = self.d.call("Info")
        self.assertEqual(info["interval_secs"], 0.2)
        self.assertEqual(info["caller_uid"], os.getuid())
        self.assertEqual(info["jobs_running"], 0)
        self.assertFalse(info["user_mode"])

    def test_host_sample(self):
        s = self.d.call("GetHostSample")["sample"]
        for k in ("cpu", "memory", "disk", "network", "gpu", "timestamp_secs"):
            self.assertIn(k, s)
        self.assertIsNone(s["job_id"])
        self.assertIsNone(s["cpu"]["process_cores_used"])
        self.assertLessEqual(s["cpu"]["utilization_pct"], len(s["cpu"]["per_core_pct"]) * 1.05)
        self.assertGreater(s["memory"]["total_mib"], 0)

    def test_stream_host_samples(self):
        with self.d.connect() as c:
            got = []
            for p in c.stream("StreamHostSamples"):
                got.append(p["sample"])
                if len(got) == 4:
                    break
        stamps = [s["timestamp_secs"] for s in got]
        self.assertEqual(stamps, sorted(stamps))
        # The stream really advances: later samples are new ticks.
        self.assertGreater(len({(s["timestamp_secs"], s.get("actual_interval_ms"), s["cpu"]["utime_secs"])
                                for s in got}), 1)

    def test_stream_requires_more(self):
        with self.assertRaises(VarlinkError) as e:
            self.d.call("StreamHostSamples")
        self.assertEqual(e.exception.error, "org.varlink.service.ExpectedMore")


class JobMethods(DaemonTest):
    def spawn(self, *cmd):
        p = subprocess.Popen(list(cmd) or ["sleep", "30"])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        return p

    def test_start_list_get_stop(self):
        p = self.spawn("sleep", "30")
        job = self.d.call("StartJob", {"pid": p.pid, "name": "napper", "start_time": starttime(p.pid),
                                       "metadata": {"project_name": "demo", "tags": ["a=1"]}})["job"]
        self.assertEqual(job["state"], "running")
        self.assertEqual(job["pid"], p.pid)
        self.assertEqual(job["metadata"], {"project_name": "demo", "tags": ["a=1"]})
        wait_for(lambda: self.d.call("GetJob", {"id": job["id"]})["job"]["summary"]["samples"] >= 2)
        by_name = self.d.call("GetJob", {"name": "napper"})["job"]
        self.assertEqual(by_name["id"], job["id"])
        jobs = self.d.call("ListJobs")["jobs"]
        self.assertEqual([j["id"] for j in jobs], [job["id"]])
        # A name is a label: a second running job may carry it, and then the
        # name no longer says which one is meant.
        twin = self.d.call("StartJob", {"pid": self.spawn("sleep", "30").pid, "name": "napper"})["job"]
        with self.assertRaises(VarlinkError) as e:
            self.d.call("StopJob", {"name": "napper"})
        self.assertEqual(e.exception.error, IFACE + ".AmbiguousJobName")
        self.assertEqual(e.exception.parameters, {"name": "napper", "ids": [job["id"], twin["id"]]})
        self.d.call("StopJob", {"id": twin["id"]})
        self.assertEqual(self.d.call("GetJob", {"name": "napper"})["job"]["id"], job["id"],
                         "the running one comes first")
        stopped = self.d.call("StopJob", {"name": "napper"})["job"]
        self.assertEqual(stopped["state"], "stopped")
        self.assertIsNone(stopped["exit_code"])
        self.assertIsNone(p.poll(), "stopping a job must not touch its processes")
        self.assertEqual(self.d.call("ListJobs", {"running_only": True})["jobs"], [])
        with self.assertRaises(VarlinkError) as e:
            self.d.call("StopJob", {"id": job["id"]})
        self.assertEqual(e.exception.error, IFACE + ".JobNotRunning")

    def test_root_exit_ends_job_with_status(self):
        p = self.spawn("sh", "-c", "sleep 0.5; exit 7")
        job = self.d.call("StartJob", {"pid": p.pid})["job"]
        # Not reaped yet: the daemon sees the zombie through its pidfd.
        wait_for(lambda: self.d.call("GetJob", {"id": job["id"]})["job"]["state"] != "running")
        j = self.d.call("GetJob", {"id": job["id"]})["job"]
        self.assertEqual(j["state"], "failed")
        self.assertEqual(j["exit_code"], 7)

    def test_finish_job_reports_signal(self):
        p = self.spawn("sleep", "30")
        job = self.d.call("StartJob", {"pid": p.pid})["job"]
        os.kill(p.pid, 9)
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
        j = self.d.call("FinishJob", {"id": job["id"], "signal": 9})["job"]
        self.assertEqual(j["state"], "failed")
        self.assertEqual((j["exit_code"], j["signal"]), (137, 9))

    def test_no_such_process_and_job(self):
        p = self.spawn("true")
        p.wait()
        with self.assertRaises(VarlinkError) as e:
            self.d.call("StartJob", {"pid": p.pid})
        self.assertEqual(e.exception.error, IFACE + ".NoSuchProcess")
        q = self.spawn("sleep", "30")
        with self.assertRaises(VarlinkError) as e:
            self.d.call("StartJob", {"pid": q.pid, "start_time": starttime(q.pid) + 1})
        self.assertEqual(e.exception.error, IFACE + ".NoSuchProcess")
        for params in ({"id": 999}, {"name": "ghost"}):
            with self.assertRaises(VarlinkError) as e:
                self.d.call("GetJob", params)
            self.assertEqual(e.exception.error, IFACE + ".NoSuchJob")

    def test_samples_json_csv_offset_follow(self):
        p = self.spawn("sh", "-c", "sleep 1.2")
        job = self.d.call("StartJob", {"pid": p.pid, "name": "short"})["job"]
        # Follow from the start: the stream ends when the job does.
        with self.d.connect() as c:
            replies = list(c.stream("GetJobSamples", {"id": job["id"], "follow": True}))
        samples = [s for r in replies for s in r["samples"]]
        self.assertTrue(replies[-1]["ended"])
        self.assertEqual(replies[-1]["next_offset"], len(samples))
        self.assertGreaterEqual(len(samples), 4)
        self.assertTrue(all(s["job_id"] == job["id"] and s["tracked_pid"] == p.pid for s in samples))
        self.assertTrue(all(s["job_name"] == "short" for s in samples))
        total = self.d.call("GetJob", {"id": job["id"]})["job"]["summary"]["samples"]
        self.assertEqual(len(samples), total)
        # Paging: offset and limit.
        page = self.d.call("GetJobSamples", {"id": job["id"], "offset": 1, "limit": 2})
        self.assertEqual(page["samples"], samples[1:3])
        self.assertEqual(page["next_offset"], 3)
        self.assertFalse(page["ended"])
        # CSV: header on offset 0, 32 fields per row, same rows as JSON.
        csv = self.d.call("GetJobSamples", {"id": job["id"], "format": "csv"})["csv"]
        lines = csv.splitlines()
        self.assertEqual(lines[0], CSV_HEADER)
        self.assertEqual(len(lines) - 1, total)
        for line, s in zip(lines[1:], samples):
            f = line.split(",")
            self.assertEqual(len(f), 32)
            self.assertEqual(f[0], "%d.%03d" % divmod(s["timestamp_ms"], 1000))
            self.assertEqual(s["timestamp_ms"] // 1000, s["timestamp_secs"])
            self.assertEqual(int(f[21]), p.pid)
        tail = self.d.call("GetJobSamples", {"id": job["id"], "format": "csv", "offset": total - 1})["csv"]
        self.assertEqual(tail.splitlines(), lines[-1:])

    def test_follow_live_job(self):
        p = self.spawn("sleep", "30")
        job = self.d.call("StartJob", {"pid": p.pid})["job"]
        with self.d.connect() as c:
            got = 0
            for r in c.stream("GetJobSamples", {"id": job["id"], "follow": True, "format": "csv"}):
                got += len([ln for ln in r["csv"].splitlines() if not ln.startswith("timestamp")])
                if got >= 5:
                    p.kill()
                if r["ended"]:
                    break
        self.assertGreaterEqual(got, 5)
        j = self.d.call("GetJob", {"id": job["id"]})["job"]
        self.assertEqual(j["summary"]["samples"], got)


if __name__ == "__main__":
    unittest.main(verbosity=2)
