"""Authorisation (DESIGN §5) with real unprivileged users: who may register,
see, stop and read which job; administrators by primary or supplementary
group (SO_PEERGROUPS); file modes of the socket and the state directory; the
per-user limit on running jobs."""

import json
import os
import pwd
import stat
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import (CTL, IFACE, Daemon, UsersDaemonTest, call_as, read_json_lines, run_ctl, world_path,  # noqa: E402
                   setpriv, spawn_as, starttime, wait_for)

DENIED, NOT_FOUND = 4, 5


class Authorization(UsersDaemonTest):
    @classmethod
    def add_users(cls):
        adm_gid = cls.users.group("adm")
        cls.adm_group = cls.users.groups[-1]
        cls.a = cls.users.user("a")
        cls.b = cls.users.user("b")
        cls.c = cls.users.user("c", groups=[cls.adm_group])   # admin through a supplementary group
        cls.p = cls.users.user("p", primary=cls.adm_group)    # admin through its primary group
        cls.e = cls.users.user("e")                           # for the running-jobs limit
        cls.uid = {u: pwd.getpwnam(u).pw_uid for u in (cls.a, cls.b, cls.c, cls.p, cls.e)}
        assert adm_gid in os.getgrouplist(cls.c, pwd.getpwnam(cls.c).pw_gid)

    @classmethod
    def daemon(cls):
        return Daemon(interval=0.2, args=["--admin-group", cls.adm_group])

    # ---- helpers ----

    def sleeper(self, user, secs=60):
        p = spawn_as(user, ["sleep", str(secs)])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        # setpriv has exec'd sleep once the real uid changed.
        wait_for(lambda: self.ruid(p.pid) == self.uid[user], what="the process of " + user)
        return p

    @staticmethod
    def ruid(pid):
        with open("/proc/%d/status" % pid) as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith("Uid:"))

    def ctl(self, user, *args, check=None):
        return run_ctl(self.d, *args, user=user, check=check)

    def start_job(self, user, name):
        """A running job of user on its own sleeper; returns (job id, process)."""
        p = self.sleeper(user)
        _, out, _ = self.ctl(user, "start", "--pid", str(p.pid), "--name", name, check=0)
        return int(out.strip()), p

    def visible_ids(self, user):
        _, out, _ = self.ctl(user, "--json", "jobs", check=0)
        return {j["id"] for j in json.loads(out)}

    def job(self, job_id):
        return self.d.call("GetJob", {"id": job_id})["job"]

    # ---- tests ----

    def test_api_url_choice_needs_admin(self):
        # The daemon's own API URL, spelt with or without a trailing '/', is no
        # choice; another URL is, and only administrators may make it.
        conf = os.path.join(self.d.tmp, "api-url.conf")
        with open(conf, "w") as f:
            f.write('upload: { api_url = "http://127.0.0.1:9/sentinel"; };\n')
        d = Daemon(interval=0.2, args=["--config", conf]).start()
        self.addCleanup(d.cleanup)
        calls = [("StartJob", {"pid": self.sleeper(self.a).pid, "name": "url-%d" % i, "sentinel_api_url": url})
                 for i, url in enumerate(["http://127.0.0.1:9/sentinel/", "http://127.0.0.1:9/sentinel",
                                          "http://127.0.0.1:9/other"])]
        res = call_as(self.a, d.socket, None, calls=calls)
        self.assertEqual([r[0] for r in res[:2]], ["ok", "ok"], res)
        self.assertEqual(res[2][:2], ("error", IFACE + ".PermissionDenied"), res[2])
        d.stop()

    def test_register_pid_of_another_user_is_denied(self):
        pb = self.sleeper(self.b)
        rc, _, err = self.ctl(self.a, "start", "--pid", str(pb.pid), "--name", "a-steals-b")
        self.assertEqual(rc, DENIED, err)
        self.assertIn("permission denied", err)
        self.assertIn("another user", err)
        [res] = call_as(self.a, self.d.socket, "StartJob", {"pid": pb.pid, "start_time": starttime(pb.pid)})
        self.assertEqual(res[:2], ("error", IFACE + ".PermissionDenied"))
        # A root process is not A's either.
        root_proc = subprocess.Popen(["sleep", "60"])
        self.addCleanup(lambda: (root_proc.kill(), root_proc.wait()))
        rc, _, err = self.ctl(self.a, "start", "--pid", str(root_proc.pid))
        self.assertEqual(rc, DENIED, err)
        self.assertFalse([j for j in self.d.call("ListJobs")["jobs"] if j["name"] == "a-steals-b"])
        # Its own process: fine, and the job is A's.
        pa = self.sleeper(self.a)
        _, out, _ = self.ctl(self.a, "start", "--pid", str(pa.pid), check=0)
        self.assertEqual(self.job(int(out))["owner_uid"], self.uid[self.a])
        self.ctl(self.a, "stop", out.strip(), check=0)

    def test_other_users_jobs_are_invisible(self):
        ja, _ = self.start_job(self.a, "iso-a")
        jb, _ = self.start_job(self.b, "iso-b")
        wait_for(lambda: self.job(jb)["summary"]["samples"] >= 2, what="samples of B's job")
        seen_a, seen_b = self.visible_ids(self.a), self.visible_ids(self.b)
        self.assertIn(ja, seen_a)
        self.assertNotIn(jb, seen_a)
        self.assertIn(jb, seen_b)
        self.assertNotIn(ja, seen_b)
        # Info counts the running jobs the caller may see: A's one, not B's.
        for user, own in ((self.a, ja), (self.b, jb)):
            info, listed = call_as(user, self.d.socket, None,
                                   calls=[("Info", {}), ("ListJobs", {"running_only": True})])
            self.assertEqual([j["id"] for j in listed[1]["jobs"]], [own], user)
            self.assertEqual(info[1]["jobs_running"], 1, user)
        [info] = call_as(self.c, self.d.socket, "Info", {})
        self.assertGreaterEqual(info[1]["jobs_running"], 2)
        # By id: denied. By name: B's names are not A's to resolve, and not
        # even their existence shows: no such job.
        for ref, code in ((str(jb), DENIED), ("iso-b", NOT_FOUND)):
            for verb in (["status", ref], ["--json", "status", ref], ["samples", ref],
                         ["samples", "--format", "csv", ref], ["stop", ref]):
                rc, out, err = self.ctl(self.a, *verb)
                self.assertEqual(rc, code, "%s: %s" % (verb, err))
                self.assertEqual(out, "", verb)
                if code == NOT_FOUND:
                    self.assertEqual(err, "resource-trackerctl: no such job: iso-b\n")
        self.assertEqual(self.job(jb)["state"], "running", "a denied stop must not stop the job")
        # The raw methods, including the streaming one and FinishJob.
        res = call_as(self.a, self.d.socket, None, calls=[
            ("GetJob", {"id": jb}), ("GetJobSamples", {"id": jb}), ("StopJob", {"id": jb}),
            ("FinishJob", {"id": jb, "exit_code": 0}), ("GetJob", {"name": "iso-b"}),
            ("GetJob", {"name": "iso-b", "owner_uid": self.uid[self.b]})])
        for r in res[:4] + res[5:]:
            self.assertEqual(r[:2], ("error", IFACE + ".PermissionDenied"), r)
        self.assertEqual(res[4][:2], ("error", IFACE + ".NoSuchJob"), res[4])
        [r] = call_as(self.a, self.d.socket, None, calls=[("ListJobs", {})])
        self.assertNotIn(jb, [j["id"] for j in r[1]["jobs"]])
        self.assertEqual(self.job(jb)["state"], "running")
        # Unknown jobs are "no such job", not "denied".
        self.assertEqual(self.ctl(self.a, "status", "999999")[0], NOT_FOUND)
        # A does all of it on its own job.
        self.ctl(self.a, "status", str(ja), check=0)
        _, out, _ = self.ctl(self.a, "samples", str(ja), check=0)
        samples = read_json_lines(out)
        self.assertTrue(samples and all(s["job_id"] == ja for s in samples))
        _, out, _ = self.ctl(self.a, "stop", "iso-a", check=0)
        self.assertIn("stopped", out)
        self.ctl(self.b, "stop", str(jb), check=0)

    def test_run_as_user(self):
        tmp = tempfile.mkdtemp(prefix="rt-auth-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", tmp]))
        os.chown(tmp, self.uid[self.a], -1)
        who = os.path.join(tmp, "who")
        rc, _, err = self.ctl(self.a, "run", "--quiet", "--job-name", "run-as-a", "--",
                              "sh", "-c", "id -u > %s; sleep 0.6" % who)
        self.assertEqual(rc, 0, err)
        with open(who) as f:
            self.assertEqual(int(f.read()), self.uid[self.a])
        [j] = [j for j in self.d.call("ListJobs")["jobs"] if j["name"] == "run-as-a"]
        self.assertEqual((j["owner_uid"], j["state"], j["exit_code"]), (self.uid[self.a], "finished", 0))
        self.assertGreaterEqual(j["summary"]["samples"], 2)
        self.assertIn(j["id"], self.visible_ids(self.a))
        self.assertNotIn(j["id"], self.visible_ids(self.b))
        self.assertEqual(self.ctl(self.b, "samples", "run-as-a")[0], NOT_FOUND)
        self.assertEqual(self.ctl(self.b, "samples", str(j["id"]))[0], DENIED)
        _, out, _ = self.ctl(self.a, "samples", "run-as-a", check=0)
        self.assertEqual(len(read_json_lines(out)), j["summary"]["samples"])

    def test_names_are_labels(self):
        """Jobs of two users, and of one user, may share a name: every command
        runs, and a name resolves among the caller's own jobs."""
        tmp = tempfile.mkdtemp(prefix="rt-names-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", tmp]))
        os.chmod(tmp, 0o777)
        runs = []
        for user, tag in ((self.a, "a1"), (self.b, "b1"), (self.a, "a2")):
            mark = os.path.join(tmp, tag)
            p = subprocess.Popen(setpriv(user) + [world_path(CTL), "run", "-q", "-n", "train", "--",
                                                   "sh", "-c", "touch %s; sleep 3" % mark],
                                 env=dict(os.environ, RESOURCE_TRACKER_SOCKET=self.d.socket),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.addCleanup(lambda p=p: (p.poll() is None and p.kill(), p.wait()))
            runs.append((user, mark, p))
        for _, mark, _ in runs:
            wait_for(lambda: os.path.exists(mark), timeout=30, what="the command to run")
        mine = {u: [j for j in self.d.call("ListJobs", {"name": "train", "running_only": True})["jobs"]
                    if j["owner_uid"] == self.uid[u]] for u in (self.a, self.b)}
        self.assertEqual((len(mine[self.a]), len(mine[self.b])), (2, 1))
        # B's name is B's job; A has two running: the error lists both ids.
        _, out, _ = self.ctl(self.b, "--json", "status", "train", check=0)
        self.assertEqual(json.loads(out)["job"]["id"], mine[self.b][0]["id"])
        rc, out, err = self.ctl(self.a, "status", "train")
        self.assertEqual(rc, 2, err)
        for j in mine[self.a]:
            self.assertIn(str(j["id"]), err)
        self.assertNotIn(str(mine[self.b][0]["id"]), err)
        [r] = call_as(self.a, self.d.socket, "GetJob", {"name": "train"})
        self.assertEqual(r[1], IFACE + ".AmbiguousJobName")
        self.assertEqual(sorted(r[2]["ids"]), sorted(j["id"] for j in mine[self.a]))
        # An administrator names the owner; a user may not name another.
        _, out, _ = self.ctl(self.c, "--json", "status", "--user", self.b, "train", check=0)
        self.assertEqual(json.loads(out)["job"]["id"], mine[self.b][0]["id"])
        self.assertEqual(self.ctl(self.a, "status", "--user", self.b, "train")[0], DENIED)
        for user, _, p in runs:
            _, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
        # All ended: the newest of A's is meant.
        _, out, _ = self.ctl(self.a, "--json", "status", "train", check=0)
        self.assertEqual(json.loads(out)["job"]["id"], max(j["id"] for j in mine[self.a]))
        self.assertEqual(json.loads(out)["job"]["state"], "finished")
        # C (an administrator) has no job of that name: its own come first.
        self.assertEqual(self.ctl(self.c, "status", "train")[0], NOT_FOUND)

    def test_root_sees_and_stops_everything(self):
        ja, _ = self.start_job(self.a, "root-a")
        jb, _ = self.start_job(self.b, "root-b")
        _, out, _ = run_ctl(self.d, "--json", "jobs", check=0)
        ids = {j["id"] for j in json.loads(out)}
        self.assertTrue({ja, jb} <= ids)
        # A name means root's own jobs unless root names the owner.
        self.assertEqual(run_ctl(self.d, "status", "root-a")[0], NOT_FOUND)
        _, out, _ = run_ctl(self.d, "--json", "status", "--user", self.a, "root-a", check=0)
        self.assertEqual(json.loads(out)["job"]["id"], ja)
        wait_for(lambda: self.job(jb)["summary"]["samples"] >= 1, what="a sample of B's job")
        _, out, _ = run_ctl(self.d, "samples", str(jb), check=0)
        self.assertTrue(read_json_lines(out))
        for j in (ja, jb):
            _, out, _ = run_ctl(self.d, "--json", "stop", str(j), check=0)
            self.assertEqual(json.loads(out)["state"], "stopped")
        # Root may register anyone's process; the job is then root's.
        pb = self.sleeper(self.b)
        job = self.d.call("StartJob", {"pid": pb.pid, "start_time": starttime(pb.pid)})["job"]
        self.assertEqual(job["owner_uid"], 0)
        self.assertNotIn(job["id"], self.visible_ids(self.b))
        self.d.call("StopJob", {"id": job["id"]})

    def test_admin_group_members_see_all(self):
        ja, _ = self.start_job(self.a, "adm-a")
        jb, _ = self.start_job(self.b, "adm-b")
        for admin in (self.c, self.p):
            self.assertTrue({ja, jb} <= self.visible_ids(admin), admin)
            _, out, _ = self.ctl(admin, "--json", "info", check=0)
            self.assertTrue(json.loads(out)["caller_is_admin"], admin)
            self.ctl(admin, "status", str(jb), check=0)
            self.ctl(admin, "status", "--user", self.b, "adm-b", check=0)
        _, out, _ = self.ctl(self.a, "--json", "info", check=0)
        self.assertFalse(json.loads(out)["caller_is_admin"])
        # Membership counts as the connecting process has it (SO_PEERGROUPS), not as
        # /etc/group says: C without its supplementary groups is an ordinary user.
        p = subprocess.run(setpriv(self.c, keep_groups=False) + [world_path(CTL), "--json", "jobs"],
                           env=dict(os.environ, RESOURCE_TRACKER_SOCKET=self.d.socket),
                           capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse({ja, jb} & {j["id"] for j in json.loads(p.stdout)})
        # However many groups it has, the admin group among them is found.
        many = list(range(300000, 300400))
        for extra, admin in ((many, True), (many[:5], True), ([], True)):
            [r] = call_as(self.c, self.d.socket, "Info", {}, extra_groups=extra)
            self.assertEqual(r[1]["caller_is_admin"], admin, len(extra))
        [r] = call_as(self.a, self.d.socket, "Info", {}, extra_groups=many)
        self.assertFalse(r[1]["caller_is_admin"])
        # An administrator may stop anyone's job.
        _, out, _ = self.ctl(self.c, "--json", "stop", "--user", self.a, "adm-a", check=0)
        self.assertEqual(json.loads(out)["state"], "stopped")
        self.ctl(self.p, "stop", str(jb), check=0)

    def test_file_modes(self):
        ja, _ = self.start_job(self.a, "modes-a")
        wait_for(lambda: self.job(ja)["summary"]["samples"] >= 1, what="a sample")
        st = os.stat(self.d.socket)
        self.assertTrue(stat.S_ISSOCK(st.st_mode))
        # Open to every local user on purpose: each call is authorised from SO_PEERCRED.
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o666)
        seen = {}
        for root, dirs, files in os.walk(self.d.state_dir):
            for name in dirs + files:
                path = os.path.join(root, name)
                seen[os.path.relpath(path, self.d.state_dir)] = stat.S_IMODE(os.lstat(path).st_mode)
        seen["."] = stat.S_IMODE(os.stat(self.d.state_dir).st_mode)
        job_dir = "jobs/%d" % ja
        hot = [rel for rel in seen if rel.startswith("host/") and rel.endswith(".hot")]
        self.assertEqual(len(hot), 1, "the host timeline being written")
        for rel, mode in ((".", 0o750), ("jobs", 0o750), (job_dir, 0o750), (job_dir + "/job.json", 0o640),
                          (job_dir + "/metadata.json", 0o640), (job_dir + "/fig-0.hot", 0o640), ("host", 0o750),
                          (hot[0], 0o640), ("last-id", 0o640)):
            self.assertIn(rel, seen)
            self.assertEqual(seen[rel] & ~mode, 0, "%s is %o, more open than %o" % (rel, seen[rel], mode))
        for rel, mode in seen.items():
            self.assertEqual(mode & 0o007, 0, "%s is %o: world-accessible" % (rel, mode))
        # Users cannot read the state directly, only through the daemon.
        for rel in (job_dir + "/fig-0.hot", hot[0]):
            rc = subprocess.run(setpriv(self.a) + ["cat", os.path.join(self.d.state_dir, rel)],
                                capture_output=True).returncode
            self.assertNotEqual(rc, 0)
        self.ctl(self.a, "stop", str(ja), check=0)

    def test_world_open_state_dir_is_tightened(self):
        d = Daemon(interval=0.5)
        self.addCleanup(d.cleanup)
        os.makedirs(d.state_dir, mode=0o777)
        os.chmod(d.state_dir, 0o777)
        d.start()
        try:
            self.assertEqual(stat.S_IMODE(os.stat(d.state_dir).st_mode) & 0o007, 0)
        finally:
            d.stop()

    def test_running_jobs_limit_per_user(self):
        # 65 processes: one job each (a process is one running job's at a time).
        procs = [self.sleeper(self.e) for _ in range(65)]
        pe = procs[-1]  # the one left untracked
        res = call_as(self.e, self.d.socket, None,
                      calls=[("StartJob", {"pid": p.pid, "start_time": starttime(p.pid)}) for p in procs])
        ok = [r[1]["job"]["id"] for r in res if r[0] == "ok"]
        self.assertEqual(len(ok), 64, res[-1])
        self.assertEqual(res[-1], ("error", IFACE + ".LimitExceeded", {"limit": "jobs_per_user", "max": 64}))
        rc, _, err = self.ctl(self.e, "start", "--pid", str(pe.pid))
        self.assertEqual(rc, 1, err)
        self.assertIn("jobs_per_user", err)
        # run at the limit: the command runs all the same, untracked.
        tmp = tempfile.mkdtemp(prefix="rt-auth-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", tmp]))
        os.chown(tmp, self.uid[self.e], -1)
        ran = os.path.join(tmp, "ran")
        rc, _, err = self.ctl(self.e, "run", "--", "touch", ran)
        self.assertEqual(rc, 0, err)
        self.assertTrue(os.path.exists(ran), "the command did not run")
        self.assertEqual(err, "resource-trackerctl: warn: limit reached: jobs_per_user (at most 64); running touch "
                         "untracked\n")
        # Other users and root are not affected.
        pa = self.sleeper(self.a)
        [r] = call_as(self.a, self.d.socket, "StartJob", {"pid": pa.pid})
        self.assertEqual(r[0], "ok")
        root_job = self.d.call("StartJob", {"pid": self.sleeper(self.e).pid})["job"]["id"]
        # Ended jobs do not count.
        res = call_as(self.e, self.d.socket, None, calls=[("StopJob", {"id": i}) for i in ok]
                      + [("StartJob", {"pid": pe.pid})])
        self.assertTrue(all(r[0] == "ok" for r in res), [r for r in res if r[0] != "ok"][:1])
        for r in res[-1:]:
            call_as(self.e, self.d.socket, "StopJob", {"id": r[1]["job"]["id"]})
        self.d.call("StopJob", {"id": root_job})
        [r] = call_as(self.a, self.d.socket, "ListJobs", {"running_only": True})
        for j in r[1]["jobs"]:
            call_as(self.a, self.d.socket, "StopJob", {"id": j["id"]})


if __name__ == "__main__":
    unittest.main(verbosity=2)
