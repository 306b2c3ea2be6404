"""Job sample lines repeat the host sample of their tick; the sampler
serialises the host-only parts (per-core figures, disks, GPUs, memory,
NICs) once per tick and splices them into every job's line. Check that
every stored line stays valid JSON with keys sorted at every level and that
these parts have the host sample's shape, for several jobs at once."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import DaemonTest, wait_for  # noqa: E402

HOST_PARTS = ("disk", "gpu", "memory", "network")


def sorted_everywhere(pairs):
    keys = [k for k, _ in pairs]
    if keys != sorted(keys):
        raise AssertionError("keys not sorted: %s" % keys)
    return dict(pairs)


class JobLines(DaemonTest):
    def spawn(self):
        p = subprocess.Popen(["sleep", "30"])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        return p

    def test_host_parts_in_job_lines(self):
        ids = [self.d.call("StartJob", {"pid": self.spawn().pid})["job"]["id"] for _ in range(3)]
        wait_for(lambda: all(self.d.call("GetJob", {"id": i})["job"]["summary"]["samples"] >= 3
                             for i in ids), timeout=20, what="three samples per job")
        host = self.d.call("GetHostSample")["sample"]
        for i in ids:
            with open(os.path.join(self.d.state_dir, "jobs", str(i), "samples.jsonl")) as f:
                lines = [json.loads(line, object_pairs_hook=sorted_everywhere) for line in f]
            self.assertGreaterEqual(len(lines), 3)
            self.assertEqual(lines, self.d.call("GetJobSamples", {"id": i})["samples"][:len(lines)])
            for s in lines:
                self.assertEqual(s["job_id"], i)
                self.assertEqual(len(s["cpu"]["per_core_pct"]), len(host["cpu"]["per_core_pct"]))
                for k in HOST_PARTS:
                    self.assertIs(type(s[k]), type(host[k]), k)
                self.assertEqual([d["device"] for d in s["disk"]], [d["device"] for d in host["disk"]])
                self.assertEqual([n["interface"] for n in s["network"]],
                                 [n["interface"] for n in host["network"]])
                self.assertEqual(s["memory"]["total_mib"], host["memory"]["total_mib"])


if __name__ == "__main__":
    unittest.main()
