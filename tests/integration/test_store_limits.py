"""What a job may store (issue 11): metadata is bounded per job and an
ended job's metadata is kept on disk only; intervals read back from a record
are checked."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import IFACE, Daemon, VarlinkError, wait_for  # noqa: E402

METADATA_MAX = 64 * 1024  # RT_JOB_METADATA_MAX


def serialised(md):
    return len(json.dumps(md, separators=(",", ":")))


def tags_of(nbytes):
    """A metadata object of tags that serialises to exactly nbytes."""
    md = {"tags": []}
    while serialised(md) + 1003 <= nbytes:
        md["tags"].append("t" * 1000)
    md["tags"].append("")
    md["tags"][-1] = "t" * (nbytes - serialised(md))
    assert serialised(md) == nbytes
    return md


class Metadata(unittest.TestCase):
    def setUp(self):
        self.d = Daemon(interval=0.1).start()
        self.addCleanup(self.d.cleanup)

    def proc(self, *cmd):
        p = subprocess.Popen(list(cmd))
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        return p

    def test_metadata_over_the_limit_is_refused(self):
        p = self.proc("sleep", "30")
        # About 1 MB of tags, just under the message size limit (1 MiB), and just over this one.
        for size in (1000 * 1000, METADATA_MAX + 1):
            with self.assertRaises(VarlinkError) as e:
                self.d.call("StartJob", {"pid": p.pid, "metadata": tags_of(size)})
            self.assertEqual(e.exception.error, IFACE + ".LimitExceeded")
            self.assertEqual(e.exception.parameters, {"limit": "metadata_bytes", "max": METADATA_MAX})
        self.assertEqual(self.d.call("ListJobs")["jobs"], [], "nothing was registered")
        self.assertEqual(os.listdir(os.path.join(self.d.state_dir, "jobs")), [])
        self.d.stop()

    def test_ended_jobs_metadata_comes_from_disk(self):
        md = tags_of(METADATA_MAX)  # exactly the limit
        p = self.proc("sleep", "30")
        job = self.d.call("StartJob", {"pid": p.pid, "metadata": md})["job"]
        self.assertEqual(job["metadata"], md)
        stopped = self.d.call("StopJob", {"id": job["id"]})["job"]
        self.assertEqual(stopped["metadata"], md)
        self.assertEqual(self.d.call("GetJob", {"id": job["id"]})["job"]["metadata"], md)
        self.assertEqual(self.d.call("ListJobs")["jobs"][0]["metadata"], md)
        # Once, in its own file; the record does not repeat it.
        jdir = os.path.join(self.d.state_dir, "jobs", str(job["id"]))
        with open(os.path.join(jdir, "metadata.json")) as f:
            self.assertEqual(json.load(f), md)
        with open(os.path.join(jdir, "job.json")) as f:
            self.assertNotIn("metadata", json.load(f))
        self.d.stop()
        d2 = Daemon(interval=0.1, state_dir=self.d.state_dir).start()
        self.addCleanup(d2.cleanup)
        self.assertEqual(d2.call("GetJob", {"id": job["id"]})["job"]["metadata"], md)
        d2.stop()

    def test_record_from_before_the_metadata_file(self):
        p = self.proc("sleep", "30")
        md = {"project_name": "old", "tags": ["a", "b"]}
        job = self.d.call("StartJob", {"pid": p.pid, "metadata": md})["job"]
        self.d.call("StopJob", {"id": job["id"]})
        self.d.stop()
        jdir = os.path.join(self.d.state_dir, "jobs", str(job["id"]))
        with open(os.path.join(jdir, "job.json")) as f:
            rec = json.load(f)
        rec["metadata"] = md
        with open(os.path.join(jdir, "job.json"), "w") as f:
            json.dump(rec, f)
        os.unlink(os.path.join(jdir, "metadata.json"))
        d2 = Daemon(interval=0.1, state_dir=self.d.state_dir).start()
        self.addCleanup(d2.cleanup)
        self.assertEqual(d2.call("GetJob", {"id": job["id"]})["job"]["metadata"], md)
        with open(os.path.join(jdir, "metadata.json")) as f:
            self.assertEqual(json.load(f), md)
        d2.stop()

    def test_interval_out_of_range_in_a_record(self):
        p = self.proc("sleep", "30")
        job = self.d.call("StartJob", {"pid": p.pid, "interval_secs": 0.2})["job"]
        self.d.call("StopJob", {"id": job["id"]})
        self.d.stop()
        path = os.path.join(self.d.state_dir, "jobs", str(job["id"]), "job.json")
        for bad in (0, -5, 1e300, 86400):
            with open(path) as f:
                rec = json.load(f)
            rec["interval_secs"] = bad
            with open(path, "w") as f:
                json.dump(rec, f)
            d2 = Daemon(interval=0.1, state_dir=self.d.state_dir).start()
            try:
                got = d2.call("GetJob", {"id": job["id"]})["job"]
                self.assertEqual(got["interval_secs"], 1.0, bad)
                wait_for(lambda: "interval_secs out of range in its record" in d2.read_log(),
                         what="the warning")
                d2.stop()
            finally:
                d2.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
