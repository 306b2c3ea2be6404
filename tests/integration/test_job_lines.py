"""Job samples repeat the host sample of their tick; the store keeps that
host sample once for every job and rebuilds each job's sample from it and
the job's own figures. Check that every sample read back is JSON with keys
sorted at every level (as the live ones), that its host parts have the host
sample's shape, and that jobs sampled at the same tick show the same host
parts, for several jobs at once."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import DaemonTest, wait_for  # noqa: E402

HOST_PARTS = ("disk", "gpu", "memory", "network")


def assert_sorted_everywhere(v):
    """Keys in order at every level (json.loads keeps the order sent)."""
    if isinstance(v, dict):
        if list(v) != sorted(v):
            raise AssertionError("keys not sorted: %s" % list(v))
        for x in v.values():
            assert_sorted_everywhere(x)
    elif isinstance(v, list):
        for x in v:
            assert_sorted_everywhere(x)


class JobLines(DaemonTest):
    interval = 1.0  # one tick per second: a timestamp names the tick
    def spawn(self):
        p = subprocess.Popen(["sleep", "30"])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        return p

    def test_host_parts_in_job_lines(self):
        ids = [self.d.call("StartJob", {"pid": self.spawn().pid})["job"]["id"] for _ in range(3)]
        wait_for(lambda: all(self.d.call("GetJob", {"id": i})["job"]["summary"]["samples"] >= 3
                             for i in ids), timeout=20, what="three samples per job")
        host = self.d.call("GetHostSample")["sample"]
        by_tick = {}
        for i in ids:
            lines = self.d.call("GetJobSamples", {"id": i})["samples"]
            self.assertGreaterEqual(len(lines), 3)
            for s in lines:
                assert_sorted_everywhere(s)
                self.assertEqual(s["job_id"], i)
                self.assertEqual(len(s["cpu"]["per_core_pct"]), len(host["cpu"]["per_core_pct"]))
                for k in HOST_PARTS:
                    self.assertIs(type(s[k]), type(host[k]), k)
                self.assertEqual([d["device"] for d in s["disk"]], [d["device"] for d in host["disk"]])
                self.assertEqual([n["interface"] for n in s["network"]],
                                 [n["interface"] for n in host["network"]])
                self.assertEqual(s["memory"]["total_mib"], host["memory"]["total_mib"])
                parts = {k: s[k] for k in HOST_PARTS + ("cpu",)}
                parts["cpu"] = {k: v for k, v in s["cpu"].items() if not k.startswith("process_")}
                by_tick.setdefault(s["timestamp_secs"], []).append(parts)
        shared = [v for v in by_tick.values() if len(v) > 1]
        self.assertTrue(shared, "jobs sampled at the same tick")
        for v in shared:
            for other in v[1:]:
                self.assertEqual(other, v[0])


if __name__ == "__main__":
    unittest.main()
