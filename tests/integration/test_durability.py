"""Durable state (DESIGN §4, §10): jobs and samples survive kill -9 of the
daemon; running jobs are resumed or marked lost; a torn last record is
dropped and a damaged block loses only its samples; paging works across a
restart, across sealed blocks and over samples files of an older daemon
(moved into the store once); retention by age and size; a full disk loses
nothing that fits in memory; an unwritable state directory stops the daemon
at start."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import zlib

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import (DAEMON, SANITIZER_MARKS, TOOLS, Daemon, job_samples, spawn_at, starttime, wait_for)  # noqa: E402

DUMP = os.path.join(TOOLS, "rt_store_dump")


class StateDirTest(unittest.TestCase):
    """Daemons that share one state directory, started in turn."""

    interval = 0.1

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-dur-")
        self.addCleanup(lambda: shutil.rmtree(self.tmp, ignore_errors=True))
        self.state = os.path.join(self.tmp, "state")
        self.daemons = []

    def daemon(self, *args, env=None):
        d = Daemon(interval=self.interval, args=list(args), state_dir=self.state, env=env)
        self.daemons.append(d)
        self.addCleanup(d.cleanup)
        return d.start()

    def kill9(self, d):
        d.kill9()
        d.check_log_clean()

    def proc(self, *cmd):
        p = subprocess.Popen(list(cmd))
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        return p

    def job_path(self, job_id, name="job.json"):
        return os.path.join(self.state, "jobs", str(job_id), name)

    def stored(self, job_id=None, csv=False):
        """What the state directory holds, read as the daemon reads it (no
        daemon may run): a summary, or a job's samples as JSON lines / CSV."""
        args = [DUMP, self.state] + (["--job", str(job_id)] + (["--csv"] if csv else []) if job_id else [])
        out = subprocess.run(args, check=True, capture_output=True, timeout=60).stdout
        if job_id is None:
            return json.loads(out)
        return out.decode() if csv else [json.loads(ln) for ln in out.splitlines()]

    @staticmethod
    def job(d, job_id):
        return d.call("GetJob", {"id": job_id})["job"]

    def wait_samples(self, d, job_id, n):
        wait_for(lambda: self.job(d, job_id)["summary"]["samples"] >= n, timeout=30,
                 what="%d samples of job %d" % (n, job_id))


class KillAndRestart(StateDirTest):
    def test_kill9_keeps_everything_and_resumes(self):
        stall = os.path.join(self.tmp, "stall")
        d1 = self.daemon(env={"RESOURCE_TRACKERD_TEST_STALL_FILE": stall})
        # A finished job, a stopped job, a running job that survives the
        # daemon's death and one whose process dies while no daemon runs.
        done = self.proc("sh", "-c", "sleep 0.5; exit 3")
        j_done = d1.call("StartJob", {"pid": done.pid, "name": "done"})["job"]["id"]
        napper = self.proc("sleep", "60")
        j_stop = d1.call("StartJob", {"pid": napper.pid, "name": "stopped"})["job"]["id"]
        survivor = self.proc("sleep", "60")
        j_surv = d1.call("StartJob", {"pid": survivor.pid, "name": "survivor",
                                      "start_time": starttime(survivor.pid)})["job"]["id"]
        victim = self.proc("sleep", "60")
        j_vict = d1.call("StartJob", {"pid": victim.pid, "name": "victim"})["job"]["id"]
        wait_for(lambda: self.job(d1, j_done)["state"] == "failed", what="the first job to end")
        self.wait_samples(d1, j_stop, 3)
        d1.call("StopJob", {"id": j_stop})
        self.wait_samples(d1, j_surv, 8)
        # Freeze the ticks so that what we read is exactly what was taken.
        open(stall, "w").close()
        time.sleep(3 * self.interval)
        ids = (j_done, j_stop, j_surv, j_vict)
        before = {i: self.job(d1, i) for i in ids}
        samples = {i: job_samples(d1, i, page=5) for i in ids}
        for i in ids:
            self.assertEqual(len(samples[i]), before[i]["summary"]["samples"])
        self.kill9(d1)
        killed_at = time.time()
        victim.kill()
        victim.wait()
        os.unlink(stall)
        time.sleep(1.5)  # so that "ended when last seen" and "ended at restart" differ

        d2 = self.daemon()
        for i in (j_done, j_stop):
            self.assertEqual(self.job(d2, i), before[i], "ended jobs come back unchanged")
            self.assertEqual(job_samples(d2, i), samples[i])
        # Jobs are resumed on the sampler thread while the daemon already
        # answers: the victim is running until the daemon has looked.
        wait_for(lambda: self.job(d2, j_vict)["state"] != "running", what="the victim to be marked lost")
        lost = self.job(d2, j_vict)
        self.assertEqual(lost["state"], "lost")
        self.assertIsNone(lost["exit_code"])
        self.assertLessEqual(lost["ended_at"], killed_at + 0.5, "a lost job ends when it was last seen")
        self.assertGreaterEqual(lost["ended_at"], before[j_vict]["started_at"])
        self.assertEqual(job_samples(d2, j_vict), samples[j_vict])
        # The survivor is resumed: same samples first, then new ones.
        n = len(samples[j_surv])
        self.assertEqual(self.job(d2, j_surv)["state"], "running")
        self.wait_samples(d2, j_surv, n + 6)
        after = job_samples(d2, j_surv, page=3)
        self.assertEqual(after[:n], samples[j_surv])
        self.assertTrue(all(s["job_id"] == j_surv and s["tracked_pid"] == survivor.pid for s in after[n:]))
        self.assertGreaterEqual(after[n]["timestamp_secs"], int(killed_at))
        # Paging across the restart: every split gives the same sequence.
        for off in (n - 2, n - 1, n, n + 1):
            page = d2.call("GetJobSamples", {"id": j_surv, "offset": off, "limit": 3})
            self.assertEqual(page["samples"], after[off:off + 3])
            self.assertEqual(page["next_offset"], off + 3)
        csv = job_samples(d2, j_surv, page=4, fmt="csv").splitlines()
        self.assertEqual(len(csv) - 1, self.job(d2, j_surv)["summary"]["samples"])
        # The totals continue from the restored ones.
        s2 = self.job(d2, j_surv)["summary"]
        self.assertGreaterEqual(s2["samples"], n + 6)
        self.assertGreaterEqual(s2["cpu_secs"], before[j_surv]["summary"]["cpu_secs"])
        # Ids go on from the highest one handed out.
        fresh = self.proc("sleep", "60")
        j_new = d2.call("StartJob", {"pid": fresh.pid})["job"]["id"]
        self.assertGreater(j_new, max(ids))
        d2.call("StopJob", {"id": j_new})
        survivor.kill()
        wait_for(lambda: self.job(d2, j_surv)["state"] != "running", what="the survivor to end")
        final = self.job(d2, j_surv)
        self.assertEqual(final["summary"]["samples"], len(job_samples(d2, j_surv)))
        served = job_samples(d2, j_surv)
        d2.stop()
        self.assertEqual(self.stored(j_surv), served)

    def test_kill9_right_after_the_answers(self):
        # StartJob and FinishJob answer once the job's files are written,
        # before they are synced (docs/jobs.md, "Durability"): the page cache
        # keeps them for the next daemon however soon this one dies.
        d1 = self.daemon()
        p = self.proc("sleep", "60")
        j = d1.call("StartJob", {"pid": p.pid, "name": "quick", "metadata": {"team": "t1"}})["job"]["id"]
        self.kill9(d1)
        d2 = self.daemon()
        job = self.job(d2, j)
        self.assertEqual((job["name"], job["state"], job["metadata"]["team"]), ("quick", "running", "t1"))
        d2.call("FinishJob", {"id": j, "exit_code": 3})
        self.kill9(d2)
        d3 = self.daemon()
        job = self.job(d3, j)
        self.assertEqual((job["state"], job["exit_code"]), ("failed", 3))
        fresh = self.proc("sleep", "60")
        self.assertEqual(d3.call("StartJob", {"pid": fresh.pid})["job"]["id"], j + 1, "the id counter kept")
        d3.stop()

    def test_record_log_is_replayed_at_start(self):
        # What a crash left in records.log before the files were written:
        # a job whose files never came, an end its record does not show yet,
        # and the end of a job retention removed since.
        d1 = self.daemon()
        p = self.proc("sleep", "60")
        started = d1.call("StartJob", {"pid": p.pid, "name": "no-files", "metadata": {"team": "t2"}})["job"]["id"]
        q = self.proc("sh", "-c", "sleep 0.3")
        ended = d1.call("StartJob", {"pid": q.pid, "name": "end-not-written"})["job"]["id"]
        wait_for(lambda: self.job(d1, ended)["state"] == "finished", what="a finished job")
        d1.stop()
        with open(os.path.join(self.state, "records.log")) as f:
            self.assertEqual(f.read(), "", "a clean stop leaves the log empty")
        with open(self.job_path(started)) as f:
            started_rec = json.load(f)
        with open(self.job_path(ended)) as f:
            ended_rec = json.load(f)
        shutil.rmtree(os.path.dirname(self.job_path(started)))
        with open(self.job_path(ended), "w") as f:
            json.dump(dict(ended_rec, state="running", ended_at=None, exit_code=None), f)
        gone = dict(ended_rec, id=ended + 100)
        with open(os.path.join(self.state, "records.log"), "w") as f:
            for e in ({"id": started, "record": started_rec, "metadata": {"team": "t2"}},
                      {"id": ended, "record": ended_rec}, {"id": ended + 100, "record": gone}):
                f.write(json.dumps(e) + "\n")
        d2 = self.daemon()
        job = self.job(d2, started)
        self.assertEqual((job["name"], job["state"], job["metadata"]["team"]), ("no-files", "running", "t2"))
        job = self.job(d2, ended)
        self.assertEqual((job["state"], job["exit_code"]), ("finished", 0))
        self.assertFalse(os.path.exists(os.path.dirname(self.job_path(ended + 100))), "removed stays removed")
        with open(os.path.join(self.state, "records.log")) as f:
            self.assertEqual(f.read(), "", "replayed, then emptied")
        d2.call("StopJob", {"id": started})
        d2.stop()

    def test_job_ids_end_at_2_pow_63_without_wrapping(self):
        # The API's integers are signed 64-bit: the last id is 2**63 - 1.
        # After it, StartJob is refused; the counter never wraps to 1 and
        # overwrites that job.
        d1 = self.daemon()
        p = self.proc("sleep", "60")
        first = d1.call("StartJob", {"pid": p.pid, "name": "first"})["job"]
        self.assertEqual(first["id"], 1)
        p.kill()
        p.wait()
        wait_for(lambda: self.job(d1, 1)["state"] != "running", what="job 1 to end")
        d1.stop()
        with open(os.path.join(self.state, "last-id"), "w") as f:
            f.write("%d\n" % (2**63 - 2))
        d2 = self.daemon()
        q = self.proc("sleep", "60")
        last = d2.call("StartJob", {"pid": q.pid})["job"]
        self.assertEqual(last["id"], 2**63 - 1)
        self.assertEqual(d2.call("GetJob", {"id": 2**63 - 1})["job"]["pid"], q.pid)
        other = self.proc("sleep", "60")  # not tracked: only the ids can refuse it
        for _ in range(3):
            with d2.connect() as c:
                c.send("%s.StartJob" % "com.sparecores.ResourceTracker", {"pid": other.pid})
                r = c.recv()
            self.assertEqual(r["error"], "com.sparecores.ResourceTracker.InternalError")
            self.assertEqual(r["parameters"]["reason"], "every job id has been used")
        self.assertEqual(self.job(d2, 1)["name"], "first")
        self.assertEqual([j["id"] for j in d2.call("ListJobs")["jobs"]], [2**63 - 1, 1])
        d2.call("StopJob", {"id": 2**63 - 1})
        d2.stop()

    def test_reused_pid_is_not_resumed(self):
        d1 = self.daemon()
        p = self.proc("sleep", "60")
        job = d1.call("StartJob", {"pid": p.pid, "start_time": starttime(p.pid)})["job"]["id"]
        self.wait_samples(d1, job, 2)
        self.kill9(d1)
        n = self.stored()["jobs"][str(job)]["samples"]
        p.kill()
        p.wait()
        # A stranger takes the PID while no daemon runs, and burns CPU.
        out = os.path.join(self.tmp, "stranger.json")
        spawn_at(self, p.pid, os.path.join(TOOLS, "rt_workload"), "--start-burn", "300", "--sleep-ms", "5000",
                 "--out", out)
        d2 = self.daemon()
        wait_for(lambda: self.job(d2, job)["state"] != "running", what="the job to be marked lost")
        lost = self.job(d2, job)
        self.assertEqual(lost["state"], "lost")
        time.sleep(5 * self.interval)
        self.assertEqual(self.job(d2, job)["summary"], lost["summary"])
        self.assertEqual(lost["summary"]["samples"], n)
        self.assertEqual(len(job_samples(d2, job)), n)
        self.assertEqual(self.pidfds(d2), 0, "no pidfd kept for a lost job")
        d2.stop()

    @staticmethod
    def pidfds(d):
        fds = os.path.join("/proc", str(d.proc.pid), "fd")
        n = 0
        for fd in os.listdir(fds):
            try:
                n += os.readlink(os.path.join(fds, fd)) == "anon_inode:[pidfd]"
            except OSError:
                pass
        return n

    def test_torn_last_record_is_dropped(self):
        d1 = self.daemon()
        p = self.proc("sleep", "60")
        running = d1.call("StartJob", {"pid": p.pid, "name": "torn-running"})["job"]["id"]
        q = self.proc("sh", "-c", "sleep 0.6")
        ended = d1.call("StartJob", {"pid": q.pid, "name": "torn-ended"})["job"]["id"]
        wait_for(lambda: self.job(d1, ended)["state"] == "finished", what="a finished job")
        self.wait_samples(d1, running, 3)
        # An ended job's block is sealed at the tick after its end.
        wait_for(lambda: os.path.exists(self.job_path(ended, "fig-0.z")), what="the ended job's block")
        self.kill9(d1)
        before = {i: self.stored(i) for i in (running, ended)}
        # A write cut short at the end of the running job's figures and of
        # the host timeline; a block of the ended job damaged on disk.
        hot = [os.path.join(self.state, "host", f) for f in os.listdir(os.path.join(self.state, "host"))
               if f.endswith(".hot")]
        self.assertEqual(len(hot), 1)
        for path in (self.job_path(running, "fig-0.hot"), hot[0]):
            with open(path, "ab") as f:
                f.write(b"\xe5R\x40\x00\x00\x00\x12\x34")  # a record cut short
        with open(self.job_path(ended, "fig-0.z"), "r+b") as f:
            f.seek(-5, os.SEEK_END)
            f.write(b"\xff\xff\xff\xff\xff")
        d2 = self.daemon()
        log = d2.read_log()
        self.assertIn("job %d: dropping a torn last sample" % running, log)
        self.assertIn("host timeline: dropping a torn last sample", log)
        self.assertEqual(log.count("torn last sample"), 2, "warned once per file")
        n = len(before[running])
        self.assertEqual(job_samples(d2, running)[:n], before[running])
        self.wait_samples(d2, running, n + 3)
        after = job_samples(d2, running)
        self.assertEqual(after[:n], before[running])
        self.assertEqual(len(after), self.job(d2, running)["summary"]["samples"])
        # The damaged block's samples are gone, nothing else: no garbage is sent.
        self.assertEqual(job_samples(d2, ended), [])
        wait_for(lambda: "is damaged" in d2.read_log(), what="the damage logged")
        self.assertEqual(self.job(d2, ended)["state"], "finished")
        self.assertEqual(job_samples(d2, ended, fmt="csv").splitlines()[1:], [])
        d2.call("StopJob", {"id": running})
        d2.stop()

    def test_paging_over_an_older_daemons_samples_file(self):
        # A samples file as an older daemon wrote it (one JSON sample per
        # line, no host_timestamp_ms), grown past several sealed blocks'
        # worth while no daemon runs: moved into the store at start, every
        # line rebuilt byte for byte, with when its host part was taken (its
        # own time) added; a line that says what the store cannot rebuild (a
        # timestamp_ms not of its second) is kept as it was; a line that is
        # no sample is dropped with a log line.
        d1 = self.daemon()
        p = self.proc("sleep", "60")
        job = d1.call("StartJob", {"pid": p.pid, "name": "long", "start_time": starttime(p.pid)})["job"]["id"]
        self.wait_samples(d1, job, 2)
        d1.stop()  # a clean stop keeps the job running on disk
        text = subprocess.run([DUMP, self.state, "--job", str(job)], check=True, capture_output=True).stdout
        lines = text.decode().splitlines()
        n = 3 * 256 + 45
        grown = [re.sub(r'"timestamp_ms":\d+,"timestamp_secs":\d+',
                        '"timestamp_ms":%d,"timestamp_secs":%d' % ((1000000 + k) * 1000, 1000000 + k),
                        re.sub(r'"host_timestamp_ms":\d+,', "", lines[k % len(lines)])) for k in range(n)]
        now = [ln.replace('"job_id":', '"host_timestamp_ms":%d,"job_id":' % ((1000000 + k) * 1000), 1)
               for k, ln in enumerate(grown)]
        grown[7] = grown[7].replace('"timestamp_ms":%d' % (1000007 * 1000), '"timestamp_ms":%d' % (1000009 * 1000))
        with open(self.job_path(job, "samples.jsonl"), "w") as f:
            f.write("\n".join(grown[:300]) + "\nnot a sample\n" + "\n".join(grown[300:]) + "\n")
        d2 = self.daemon()
        self.assertFalse(os.path.exists(self.job_path(job, "samples.jsonl")), "moved into the store")
        log = d2.read_log()
        self.assertIn("job %d: %d samples moved to the new store (1 kept as they were)" % (job, n), log)
        self.assertIn("job %d: 1 lines of its samples file were not samples" % job, log)
        self.assertEqual(self.job(d2, job)["state"], "running")
        self.wait_samples(d2, job, n + 3)
        every = job_samples(d2, job, page=10000)
        self.assertEqual([s["timestamp_secs"] for s in every[:n]], list(range(1000000, 1000000 + n)))
        self.assertEqual(every[:n], [json.loads(ln) for ln in now[:7] + grown[7:8] + now[8:]])
        for off in (0, 255, 256, 257, 511, 512, n - 1, n, n + 1):
            page = d2.call("GetJobSamples", {"id": job, "offset": off, "limit": 2})
            self.assertEqual(page["samples"], every[off:off + 2], "offset %d" % off)
        self.assertEqual(job_samples(d2, job, page=97)[:len(every)], every)
        csv = d2.call("GetJobSamples", {"id": job, "offset": 512, "limit": 1, "format": "csv"})["csv"]
        self.assertEqual(csv.split(",")[0], "%d.000" % (1000000 + 512))
        d2.call("StopJob", {"id": job})
        d2.stop()
        # The lines come back as they were written, byte for byte, and the
        # time of their host part.
        out = subprocess.run([DUMP, self.state, "--job", str(job)], check=True, capture_output=True).stdout
        self.assertEqual(out.decode().splitlines()[:n], now[:7] + grown[7:8] + now[8:])


class Retention(StateDirTest):
    def finished_job(self, d, name, secs=0.4):
        p = self.proc("sh", "-c", "sleep %s" % secs)
        j = d.call("StartJob", {"pid": p.pid, "name": name})["job"]["id"]
        wait_for(lambda: self.job(d, j)["state"] == "finished", what="job %s to finish" % name)
        # The host samples it used are sealed once a tick passes with no job
        # running: the next job's are a block of their own.
        time.sleep(3 * self.interval)
        return j

    def names(self, d):
        return sorted(j["name"] for j in d.call("ListJobs")["jobs"])

    def test_by_age(self):
        d1 = self.daemon()
        old = [self.finished_job(d1, "old-%d" % i) for i in range(2)]
        p = self.proc("sleep", "60")
        d1.call("StartJob", {"pid": p.pid, "name": "long-running"})
        d1.stop()
        time.sleep(4)
        d2 = self.daemon()
        self.finished_job(d2, "young")
        d2.stop()
        d3 = self.daemon("--retention-max-age", "3")
        wait_for(lambda: self.names(d3) == ["long-running", "young"], what="old jobs to go")
        # Files go right after the jobs leave the registry.
        for j in old:
            wait_for(lambda: not os.path.exists(os.path.dirname(self.job_path(j))), what="job files to go")
        self.assertIn("removed by the retention policy", d3.read_log())
        d3.stop()

    def test_by_size(self):
        d1 = self.daemon()
        jobs = [self.finished_job(d1, "size-%d" % i, secs=0.3 + 0.1 * i) for i in range(4)]
        d1.stop()
        # What retention counts: each job's files and its share of the host
        # samples it used (here its own: the jobs ran one after the other).
        stored = self.stored()
        size = {j: stored["jobs"][str(j)]["bytes"] for j in jobs}
        self.assertAlmostEqual(sum(size.values()), stored["total_bytes"], delta=1)
        keep = int(size[jobs[2]] + size[jobs[3]] + 0.5)
        d2 = self.daemon("--retention-max-bytes", str(keep))
        wait_for(lambda: self.names(d2) == ["size-2", "size-3"], what="the oldest jobs to go")
        wait_for(lambda: not os.path.exists(os.path.dirname(self.job_path(jobs[0]))), what="job files to go")
        d2.stop()
        self.assertLessEqual(self.stored()["total_bytes"], keep)
        # Exactly at the limit: nothing more goes.
        d3 = self.daemon("--retention-max-bytes", str(keep))
        time.sleep(3 * self.interval)
        self.assertEqual(self.names(d3), ["size-2", "size-3"])
        d3.stop()

    def test_flags_are_validated(self):
        for args in (["--retention-max-age", "soon"], ["--retention-max-bytes", "-1"],
                     ["--retention-max-bytes", "12x"]):
            p = subprocess.run([DAEMON, "--socket", os.path.join(self.tmp, "s"), "--state-dir", self.state]
                               + args, capture_output=True, timeout=30)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(b"invalid --retention", p.stderr)


def mount_tmpfs(path, size, ro=False):
    os.makedirs(path, exist_ok=True)
    opts = "size=%s,mode=0755" % size + (",ro" if ro else "")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "rt-test", path], capture_output=True)
    if r.returncode != 0:
        raise unittest.SkipTest("cannot mount a tmpfs: %s" % r.stderr.decode().strip())


def umount(path):
    subprocess.run(["umount", "-l", path], capture_output=True)


class Disk(StateDirTest):
    def test_full_disk_loses_nothing_and_recovers(self):
        mnt = os.path.join(self.tmp, "mnt")
        mount_tmpfs(mnt, "2m")
        self.addCleanup(umount, mnt)
        self.state = os.path.join(mnt, "state")
        d = self.daemon()
        p = self.proc("sleep", "60")
        job = d.call("StartJob", {"pid": p.pid, "name": "full"})["job"]["id"]
        self.wait_samples(d, job, 3)
        # Fill the file system to the last byte.
        filler = self.fill(mnt)
        wait_for(lambda: "cannot write samples: No space left on device" in d.read_log(), timeout=30,
                 what="the daemon to notice the full disk")
        n_full = self.job(d, job)["summary"]["samples"]
        self.wait_samples(d, job, n_full + 10)  # sampling goes on, into memory
        # Nothing new can be registered meanwhile, and the client is told why.
        q = self.proc("sleep", "60")
        with self.assertRaises(Exception) as e:
            d.call("StartJob", {"pid": q.pid})
        self.assertIn("InternalError", str(e.exception))
        self.assertIn("state directory", str(e.exception))
        log = d.read_log()
        self.assertEqual(log.count("cannot write samples"), 1, "the error is logged once, not per tick")
        os.unlink(filler)
        wait_for(lambda: "samples are written again" in d.read_log(), timeout=30, what="recovery")
        d.call("StopJob", {"id": job})
        final = self.job(d, job)
        samples = job_samples(d, job, page=50)
        self.assertEqual(len(samples), final["summary"]["samples"])
        stamps = [s["timestamp_secs"] for s in samples]
        self.assertEqual(stamps, sorted(stamps))
        d.stop()
        self.assertEqual(self.stored(job), samples, "all on disk")

    def fill(self, mnt):
        """Fill the file system to the last byte; returns the filler's path."""
        filler = os.path.join(mnt, "filler")
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
        for chunk in (1 << 16, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError:
                pass
        os.close(fd)
        return filler

    def test_full_backlog_keeps_index_and_file_in_step(self):
        mnt = os.path.join(self.tmp, "mnt")
        mount_tmpfs(mnt, "2m")
        self.addCleanup(umount, mnt)
        self.state = os.path.join(mnt, "state")
        d = self.daemon(env={"RESOURCE_TRACKERD_TEST_BACKLOG_BYTES": "16384"})  # about six samples
        p = self.proc("sleep", "60")
        job = d.call("StartJob", {"pid": p.pid, "name": "backlog"})["job"]["id"]
        self.wait_samples(d, job, 3)
        # The syncer empties records.log once the new job's files are on disk: a
        # truncation after the fill would give back room, and a sample would fit.
        log = os.path.join(self.state, "records.log")
        wait_for(lambda: os.path.getsize(log) == 0, what="records.log emptied by the syncer")
        filler = self.fill(mnt)
        wait_for(lambda: "new samples are not kept" in d.read_log(), timeout=30, what="the backlog limit")
        held = self.job(d, job)["summary"]["samples"]
        time.sleep(5 * self.interval)
        self.assertEqual(self.job(d, job)["summary"]["samples"], held, "samples not kept are not counted")
        self.assertEqual(d.read_log().count("new samples are not kept"), 1)
        os.unlink(filler)
        wait_for(lambda: "samples are written again" in d.read_log(), timeout=30, what="recovery")
        self.wait_samples(d, job, held + 3)
        d.call("StopJob", {"id": job})
        final = self.job(d, job)
        samples = job_samples(d, job, page=4)
        self.assertEqual(len(samples), final["summary"]["samples"])
        stamps = [s["timestamp_secs"] for s in samples]
        self.assertEqual(stamps, sorted(stamps))
        d.stop()
        self.assertEqual(self.stored(job), samples, "the index follows what is on disk")

    def test_unwritable_state_dir_fails_at_start(self):
        def start(state):
            r = subprocess.run([DAEMON, "--socket", os.path.join(self.tmp, "s.sock"), "--state-dir", state,
                                "--log-target", "stderr"], capture_output=True, timeout=30)
            for mark in SANITIZER_MARKS:
                self.assertNotIn(mark.encode(), r.stderr)
            return r
        # Under a regular file.
        blocker = os.path.join(self.tmp, "file")
        open(blocker, "w").close()
        r = start(os.path.join(blocker, "state"))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(b"cannot create state directory", r.stderr)
        # An existing state directory on a read-only file system.
        mnt = os.path.join(self.tmp, "ro")
        mount_tmpfs(mnt, "1m")
        self.addCleanup(umount, mnt)
        os.makedirs(os.path.join(mnt, "state", "jobs"))
        subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
        r = start(os.path.join(mnt, "state"))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(b"Read-only file system", r.stderr)
        self.assertIn(b"state", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "s.sock")))


def flip(path, offset, mask=0x21):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([b ^ mask]))


class DamagedStore(StateDirTest):
    """Damage costs only what it touches: a flipped byte in a hot file's
    header, in a host hot file's template, a sealed host block whose header
    (with a valid checksum) claims a span of 2^32-1, and stray and older
    copies of a job's hot file. Every record that is whole is kept, the
    numbers others have seen are never given again, and each loss is logged
    once."""

    def host_files(self, ext):
        d = os.path.join(self.state, "host")
        return sorted((f for f in os.listdir(d) if f.endswith(ext)), key=lambda f: int(f.split(".")[0]))

    def test_damage_costs_only_what_it_touches(self):
        d1 = self.daemon()
        q = self.proc("sh", "-c", "sleep 1")
        ended = d1.call("StartJob", {"pid": q.pid, "name": "early"})["job"]["id"]
        wait_for(lambda: self.job(d1, ended)["state"] == "finished", what="the first job to end")
        # No job runs: the host's hot block is sealed.
        wait_for(lambda: self.host_files(".z"), what="a sealed host block")
        p = self.proc("sleep", "60")
        running = d1.call("StartJob", {"pid": p.pid, "name": "alive"})["job"]["id"]
        self.wait_samples(d1, running, 20)
        self.kill9(d1)
        early, alive = self.stored(ended), self.stored(running)
        self.assertGreaterEqual(len(early), 5)
        # A sealed host block says it spans 2^32-1 samples (a valid checksum):
        # it covered the host's hot file, which was removed with every
        # running job's host samples.
        block = os.path.join(self.state, "host", self.host_files(".z")[0])
        with open(block, "r+b") as f:
            head = bytearray(f.read(44))
            head[16:20] = (0xffffffff).to_bytes(4, "little")
            head[4:8] = (zlib.crc32(bytes(head[8:44])) & 0xffffffff).to_bytes(4, "little")
            f.seek(0)
            f.write(head)
        # A flipped byte in the running job's hot file header, and in the
        # template entry of the host's hot file (all its records use it).
        flip(self.job_path(running, "fig-0.hot"), 3)
        host_hot = os.path.join(self.state, "host", self.host_files(".hot")[0])
        flip(host_hot, 16 + 10 + 4)
        # A stray copy of the job's hot file under a name that reads as its number.
        shutil.copy(self.job_path(running, "fig-0.hot"), self.job_path(running, "fig-00.hot"))
        d2 = self.daemon()
        self.assertEqual(job_samples(d2, ended), early, "the sealed host block's samples")
        self.assertEqual(job_samples(d2, running)[:len(alive)], alive, "every sample kept, in its place")
        log = d2.read_log()
        self.assertIn("job %d: %s is damaged (its header); the samples in the damaged part are skipped (%d whole "
                      "ones kept)" % (running, "%d/fig-0.hot" % running, len(alive)), log)
        self.assertIn("says it spans 4294967295 samples, its records", log)
        self.assertEqual(log.count("says it spans"), 1)
        self.wait_samples(d2, running, len(alive) + 3)
        after = job_samples(d2, running)
        self.assertEqual(after[:len(alive)], alive)
        self.assertEqual(len(after), self.job(d2, running)["summary"]["samples"])
        self.kill9(d2)
        self.assertEqual(self.stored(running)[:len(alive)], alive, "the header was repaired on disk")
        self.assertNotIn("is damaged (its header)", self.daemon().read_log())
        self.daemons[-1].stop()

    def test_an_older_copy_of_a_hot_file_renumbers_nothing(self):
        # The job's hot file replaced by a copy taken earlier: the samples
        # after the copy are lost (logged), and new ones are numbered after
        # the last number the job's record counted, never again one a client
        # has seen.
        d1 = self.daemon()
        p = self.proc("sleep", "60")
        running = d1.call("StartJob", {"pid": p.pid, "name": "copied"})["job"]["id"]
        self.wait_samples(d1, running, 10)
        old = open(self.job_path(running, "fig-0.hot"), "rb").read()
        self.wait_samples(d1, running, 130)  # the record is saved every 60 samples
        self.kill9(d1)
        counted = json.load(open(self.job_path(running)))["summary"]["samples"]
        before = self.stored(running)
        with open(self.job_path(running, "fig-0.hot"), "wb") as f:
            f.write(old)
        kept = len(self.stored(running))
        self.assertLess(kept, counted)
        d2 = self.daemon()
        self.assertIn("job %d: its samples %d–%d are lost (its record counts %d, its files hold %d)"
                      % (running, kept, counted - 1, counted, kept), d2.read_log())
        self.assertEqual(job_samples(d2, running), before[:kept])
        self.wait_samples(d2, running, counted + 2)
        r = d2.call("GetJobSamples", {"id": running, "offset": counted, "limit": 10})
        self.assertGreaterEqual(len(r["samples"]), 1, "the next sample has the next number")
        first_new = r["samples"][0]["timestamp_ms"]
        self.assertGreater(first_new, before[-1]["timestamp_ms"], "not a number a client saw before")
        # Read from the first lost number on: the gap is skipped.
        gap = d2.call("GetJobSamples", {"id": running, "offset": kept, "limit": 1})
        self.assertEqual((gap["samples"][0]["timestamp_ms"], gap["next_offset"]), (first_new, counted + 1))
        d2.call("StopJob", {"id": running})
        d2.stop()


class DamagedStateDir(StateDirTest):
    """What is not a file of the daemon's where one belongs: a host that is a
    file or a dangling link is refused at start with a clear reason (it
    crashed the sampler at the first job); a FIFO in place of any state file
    never hangs the daemon; nothing is read through a symbolic link out of
    the state directory."""

    def start_refused(self):
        r = subprocess.run([DAEMON, "--socket", os.path.join(self.tmp, "s.sock"), "--state-dir", self.state,
                            "--log-target", "stderr"], capture_output=True, timeout=30)
        for mark in SANITIZER_MARKS:
            self.assertNotIn(mark.encode(), r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "s.sock")))
        return r.returncode, r.stderr.decode()

    def test_a_host_that_is_no_directory_is_refused_at_start(self):
        os.makedirs(self.state)
        host = os.path.join(self.state, "host")
        for make, why in ((lambda: open(host, "w").close(), "a file is where a directory belongs"),
                          (lambda: os.symlink("/nonexistent/host", host), "it is a symbolic link, which is not "
                                                                            "followed there"),
                          (lambda: os.symlink(self.tmp, host), "it is a symbolic link, which is not followed there")):
            make()
            rc, err = self.start_refused()
            self.assertEqual(rc, 1, err)
            self.assertIn("state: cannot open the host timeline (host in the state directory): %s; move it away"
                          % why, err)
            os.unlink(host)
        d = self.daemon()  # moved away: it serves, and a job's samples are kept
        p = self.proc("sleep", "60")
        jid = d.call("StartJob", {"pid": p.pid})["job"]["id"]
        self.wait_samples(d, jid, 2)
        d.stop()

    def test_fifos_and_links_in_place_of_state_files(self):
        d1 = self.daemon()
        p = self.proc("sleep", "60")
        running = d1.call("StartJob", {"pid": p.pid, "name": "alive", "metadata": {"project_name": "mine"}})["job"]
        q = self.proc("sh", "-c", "sleep 0.5")
        ended = d1.call("StartJob", {"pid": q.pid, "name": "over", "metadata": {"team": "t"}})["job"]["id"]
        wait_for(lambda: self.job(d1, ended)["state"] == "finished", what="a finished job")
        self.wait_samples(d1, running["id"], 3)
        other = d1.call("StartJob", {"pid": self.proc("sleep", "60").pid, "name": "other"})["job"]["id"]
        self.wait_samples(d1, other, 2)
        self.kill9(d1)
        # A root-only file out of the state directory, named as metadata.
        secret = os.path.join(self.tmp, "secret.json")
        with open(secret, "w") as f:
            json.dump({"project_name": "root-only secret"}, f)
        os.chmod(secret, 0o600)
        jid = running["id"]
        fifo = lambda path: (os.unlink(path) if os.path.lexists(path) else None, os.mkfifo(path))
        os.unlink(self.job_path(jid, "metadata.json"))
        os.symlink(secret, self.job_path(jid, "metadata.json"))
        os.unlink(self.job_path(ended, "metadata.json"))
        os.symlink(secret, self.job_path(ended, "metadata.json"))
        for path in (os.path.join(self.state, "last-id"), self.job_path(other, "job.json"),
                     self.job_path(other, "fig-0.hot"), os.path.join(self.state, "jobs", "77", "job.json")):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fifo(path)
        hot = [f for f in os.listdir(os.path.join(self.state, "host")) if f.endswith(".hot")]
        fifo(os.path.join(self.state, "host", "%d.z" % (int(hot[0][:-4]) + 100000)))
        os.symlink(os.path.join(self.tmp), os.path.join(self.state, "jobs", "78"))
        d2 = self.daemon()
        with d2.connect(timeout=10) as c:
            jobs = {j["id"]: j for j in c.call("ListJobs")["jobs"]}
            self.assertEqual(sorted(jobs), sorted([jid, ended]), "the jobs whose records are files")
            self.assertEqual(jobs[jid]["metadata"], {}, "a link is not followed")
            self.assertNotIn("secret", json.dumps(c.call("GetJob", {"id": ended})))
            self.assertGreaterEqual(len(job_samples(d2, jid)), 3, "its samples are kept")
            # New jobs get ids past the old ones, whatever last-id was.
            new = c.call("StartJob", {"pid": self.proc("sleep", "60").pid, "name": "next"})["job"]["id"]
            self.assertGreater(new, other)
        log = d2.read_log()
        self.assertIn("skipping job %d" % other, log)
        self.assertIn("its metadata is unreadable", log)
        t0 = time.monotonic()
        d2.stop()  # SIGTERM is heard: nothing hung on a FIFO
        self.assertLess(time.monotonic() - t0, 20)


if __name__ == "__main__":
    unittest.main(verbosity=2)
