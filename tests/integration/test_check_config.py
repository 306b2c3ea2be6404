"""The configuration file end to end, through the real resource-trackerd:
--check-config refuses each class of bad file with exit 78 and one line that
names the file, the line and the key; a good file passes and is printed;
command-line flags win over the file; drop-ins (FILE.d/*.conf) override it in
order; SIGHUP applies a good file and keeps the running configuration when
the file is bad. (The messages for every key
and value are tests/unit/test_config.c's; this checks the binary.)"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import DAEMON, IFACE, SANITIZER_MARKS, Daemon, wait_for  # noqa: E402

EX_CONFIG = 78

# (class, file text, line of the error, what the message says after "FILE:LINE: ")
BAD_FILES = [
    ("syntax error",
     'interval = 1;\n\nlimits: {\n  max_connections = ;\n};\n',
     4, "syntax error in 'max_connections = ;'"),
    ("wrong type",
     '# limits\nlimits: {\n  max_jobs_per_user = "lots";\n};\n',
     3, "limits.max_jobs_per_user: expected an integer, got a string"),
    ("unknown key",
     'interval = "1s";\nupload: {\n  api_url = "https://example.com";\n  token = "secret";\n};\n',
     4, "unknown key 'upload.token'"),
    ("out of range",
     '# sampling\ninterval = "10ms";\n',
     2, 'interval: "10ms" is out of range 100ms..1h'),
]

# What a bad file names, per class: the key (a syntax error quotes its line).
KEYS = {"syntax error": "max_connections", "wrong type": "limits.max_jobs_per_user",
        "unknown key": "upload.token", "out of range": "interval"}


def run_daemon(*args, timeout=60):
    p = subprocess.run([DAEMON] + list(args), capture_output=True, timeout=timeout)
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    for mark in SANITIZER_MARKS:
        if mark in err:
            raise AssertionError("sanitizer report from resource-trackerd:\n" + err[-6000:])
    return p.returncode, out, err


def config_values(text):
    """--check-config output as {"key" or "group.key": value text}."""
    vals, group = {}, None
    for ln in text.splitlines():
        ln = ln.strip()
        if ln.endswith(": {"):
            group = ln[:-3]
        elif ln == "};":
            group = None
        elif " = " in ln and not ln.startswith("#"):
            k, v = ln.rstrip(";").split(" = ", 1)
            vals[group + "." + k if group else k] = v
    return vals


class Files(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-config-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def conf(self, text, name="resource-trackerd.conf"):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path


class CheckConfig(Files):
    def test_help_names_the_flags(self):
        rc, out, _ = run_daemon("--help")
        self.assertEqual(rc, 0)
        for flag in ("--config FILE", "--check-config", "--interval", "--retention-max-age",
                     "--s3-region"):
            self.assertIn(flag, out)

    def test_each_bad_class_exits_78_naming_file_line_and_key(self):
        for cls, text, line, message in BAD_FILES:
            with self.subTest(cls):
                path = self.conf(text, cls.replace(" ", "-") + ".conf")
                rc, out, err = run_daemon("--check-config", "--config", path)
                self.assertEqual(rc, EX_CONFIG, err)
                self.assertEqual(out, "", "a refused file must not be printed")
                self.assertEqual(err, "resource-trackerd: %s:%d: %s\n" % (path, line, message))
                self.assertIn(KEYS[cls], err)

    def test_bad_file_at_start_exits_78_before_listening(self):
        # Without --check-config too: the daemon does not start on a bad file.
        _, text, line, message = BAD_FILES[2]
        path = self.conf(text)
        sock = os.path.join(self.tmp, "rt.sock")
        rc, out, err = run_daemon("--config", path, "--socket", sock,
                                  "--state-dir", os.path.join(self.tmp, "state"),
                                  "--log-target", "stderr")
        self.assertEqual(rc, EX_CONFIG, err)
        self.assertEqual(err, "resource-trackerd: %s:%d: %s\n" % (path, line, message))
        self.assertFalse(os.path.exists(sock), "a refused configuration must not listen")

    def test_missing_file_named_with_config_is_refused(self):
        path = os.path.join(self.tmp, "absent.conf")
        rc, out, err = run_daemon("--check-config", "--config", path)
        self.assertEqual(rc, EX_CONFIG)
        self.assertEqual(err, "resource-trackerd: %s: No such file or directory\n" % path)

    def test_good_file_exits_0_and_prints_it(self):
        path = self.conf('interval = "2s";\nretention: { max_age = "7d"; };\n'
                         'limits: { max_jobs_per_user = 5; };\n'
                         'upload: { s3_endpoint = "http://127.0.0.1:7480"; s3_region = "eu-west-1"; };\n')
        rc, out, err = run_daemon("--check-config", "--config", path)
        self.assertEqual((rc, err), (0, ""))
        v = config_values(out)
        self.assertEqual(v["interval"], '"2s"')
        self.assertEqual(v["retention.max_age"], '"7d"')
        self.assertEqual(v["retention.max_size"], '"1G"')  # not in the file: the default
        self.assertEqual(v["limits.max_jobs_per_user"], "5")
        self.assertEqual(v["upload.s3_endpoint"], '"http://127.0.0.1:7480"')
        self.assertEqual(v["upload.s3_region"], '"eu-west-1"')
        # What --check-config prints is itself a good file that says the same.
        rc2, out2, err2 = run_daemon("--check-config", "--config", self.conf(out, "printed.conf"))
        self.assertEqual((rc2, err2, out2), (0, "", out))

    def test_quiet_prints_only_the_error(self):
        # What the unit's ExecReload= runs before it signals the daemon.
        path = self.conf('interval = "2s";\n')
        self.assertEqual(run_daemon("--check-config", "--quiet", "--config", path), (0, "", ""))
        _, text, line, message = BAD_FILES[1]
        path = self.conf(text)
        self.assertEqual(run_daemon("--check-config", "-q", "--config", path),
                         (EX_CONFIG, "", "resource-trackerd: %s:%d: %s\n" % (path, line, message)))

    def test_flags_override_the_file(self):
        path = self.conf('interval = "2s";\nretention: { max_age = "7d"; max_size = "2G"; };\n'
                         'upload: { s3_region = "eu-west-1"; };\n')
        rc, out, err = run_daemon("--check-config", "--config", path, "--interval", "500ms",
                                  "--retention-max-age", "1d", "--retention-max-bytes", "64M",
                                  "--s3-region", "us-east-2")
        self.assertEqual((rc, err), (0, ""))
        v = config_values(out)
        self.assertEqual(v["interval"], '"500ms"')
        self.assertEqual(v["retention.max_age"], '"1d"')
        self.assertEqual(v["retention.max_size"], '"64M"')
        self.assertEqual(v["upload.s3_region"], '"us-east-2"')

    def test_set_overrides_any_key_and_refuses_a_bad_one(self):
        path = self.conf('cgroups: { run = true; parent = "/a"; };\nlimits: { max_jobs_per_user = 5; };\n')
        rc, out, err = run_daemon("--check-config", "--config", path, "--set", "cgroups.run=false",
                                  "--set", "cgroups.parent=/b", "--set", "limits.max_jobs_per_user=7")
        self.assertEqual((rc, err), (0, ""))
        v = config_values(out)
        self.assertEqual((v["cgroups.run"], v["cgroups.parent"], v["limits.max_jobs_per_user"]),
                         ("false", '"/b"', "7"))
        for arg, why in (("cgroups.run", "KEY=VALUE"), ("=x", "KEY=VALUE"),
                         ("no.such=1", "unknown key 'no.such'"),
                         ("limits.max_jobs_per_user=many", "limits.max_jobs_per_user: ")):
            with self.subTest(arg=arg):
                rc, out, err = run_daemon("--check-config", "--config", path, "--set", arg)
                self.assertEqual((rc, out), (2, ""))
                self.assertIn("invalid --set: ", err)
                self.assertIn(why, err)

    def test_a_flag_does_not_hide_a_bad_file(self):
        # The file is checked as a whole even where a flag would replace the key.
        _, text, line, message = BAD_FILES[3]
        path = self.conf(text)
        rc, out, err = run_daemon("--check-config", "--config", path, "--interval", "1s")
        self.assertEqual(rc, EX_CONFIG)
        self.assertEqual(err, "resource-trackerd: %s:%d: %s\n" % (path, line, message))


class DropIns(Files):
    """FILE.d/*.conf after the main file, in byte order, each overriding the
    keys it sets: the same for --check-config, the start and SIGHUP."""

    def dropin(self, name, text):
        d = os.path.join(self.tmp, "resource-trackerd.conf.d")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_dropins_override_the_main_file_in_order(self):
        path = self.conf('interval = "2s";\nretention: { max_age = "7d"; max_size = "2G"; };\n')
        self.dropin("50-site.conf", 'interval = "3s";\nretention: { max_age = "1d"; };\n')
        self.dropin("60-host.conf", 'interval = "500ms";\n')
        self.dropin("70-off.conf.disabled", "bogus = 1;\n")  # not a drop-in: not read
        rc, out, err = run_daemon("--check-config", "--config", path)
        self.assertEqual((rc, err), (0, ""))
        v = config_values(out)
        self.assertEqual(v["interval"], '"500ms"')         # 60-host.conf
        self.assertEqual(v["retention.max_age"], '"1d"')   # 50-site.conf
        self.assertEqual(v["retention.max_size"], '"2G"')  # the main file
        # Flags still win over every file.
        rc, out, err = run_daemon("--check-config", "--config", path, "--interval", "4s")
        self.assertEqual(config_values(out)["interval"], '"4s"')

    def test_bad_dropin_refuses_the_start_naming_itself(self):
        path = self.conf('interval = "2s";\n')
        bad = self.dropin("50-bad.conf", "# site\nlimits: { max_connections = 0; };\n")
        message = "resource-trackerd: %s:2: limits.max_connections: 0 is out of range 1..65536\n" % bad
        rc, out, err = run_daemon("--check-config", "--config", path)
        self.assertEqual((rc, out, err), (EX_CONFIG, "", message))
        sock = os.path.join(self.tmp, "rt.sock")
        rc, out, err = run_daemon("--config", path, "--socket", sock,
                                  "--state-dir", os.path.join(self.tmp, "state"), "--log-target", "stderr")
        self.assertEqual((rc, err), (EX_CONFIG, message))
        self.assertFalse(os.path.exists(sock))

    def test_sighup_reads_the_dropins(self):
        path = self.conf('interval = "300ms";\n')
        d = Daemon(interval=None, args=["--config", path])
        self.addCleanup(d.cleanup)
        d.start()
        self.assertEqual(send_padded_ping(d)["error"], "org.varlink.service.InvalidParameter")

        bad = self.dropin("50-limits.conf", "limits: { max_message_size = 1; };\n")
        d.proc.send_signal(signal.SIGHUP)
        refused = ("Configuration refused, keeping the running one: %s:1: limits.max_message_size: "
                   "1 is out of range 4K..64M" % bad)
        wait_for(lambda: refused in d.read_log(), timeout=20, what="the refused drop-in's message")
        self.assertEqual(send_padded_ping(d)["error"], "org.varlink.service.InvalidParameter")

        self.dropin("50-limits.conf", 'limits: { max_message_size = "4K"; };\n')
        d.proc.send_signal(signal.SIGHUP)
        reloaded = "Configuration %s reloaded: limits.max_message_size" % path
        wait_for(lambda: reloaded in d.read_log(), timeout=20, what="the reload's message")
        r = send_padded_ping(d)
        self.assertEqual(r["error"], IFACE + ".InvalidRequest", r)
        self.assertIsNone(d.proc.poll())
        d.stop()


PAD_CALL = {"method": IFACE + ".Ping", "parameters": {"pad": "x" * 10000}}  # about 10 KB


def send_padded_ping(daemon):
    """The daemon's reply to a 10 KB Ping: InvalidParameter (within
    max_message_size) or InvalidRequest (over it, then a hang-up)."""
    with daemon.connect(timeout=15) as c:
        c.send_raw(json.dumps(PAD_CALL).encode() + b"\0")
        return c.recv()


def actual_intervals_ms(daemon, n=4):
    """actual_interval_ms of the next n host samples: the interval in effect."""
    with daemon.connect(timeout=30) as c:
        it = c.stream("StreamHostSamples")
        next(it)  # the latest sample, possibly from before the reload
        return [next(it)["sample"]["actual_interval_ms"] for _ in range(n)]


class RunningDaemon(Files):
    def start(self, path, interval):
        d = Daemon(interval=interval, args=["--config", path])
        self.addCleanup(d.cleanup)
        d.start()
        return d

    def test_flag_overrides_the_file_in_a_running_daemon(self):
        path = self.conf('interval = "2s";\n')
        d = self.start(path, interval=0.2)  # --interval 0.2
        self.assertEqual(d.call("Info")["interval_secs"], 0.2)
        self.assertLess(max(actual_intervals_ms(d, 3)), 1500)
        d.stop()

    def test_sighup_applies_a_good_file_and_keeps_the_running_one_on_a_bad_file(self):
        path = self.conf('interval = "300ms";\nlimits: {\n  max_message_size = "64K";\n};\n')
        d = self.start(path, interval=None)  # the interval comes from the file
        self.assertEqual(d.call("Info")["interval_secs"], 0.3)
        r = send_padded_ping(d)
        self.assertEqual(r, {"error": "org.varlink.service.InvalidParameter",
                             "parameters": {"parameter": "pad"}})

        # A bad file: new values before the bad key must not be applied either.
        self.conf('interval = "5s";\nlimits: {\n  max_message_size = "4K";\n'
                  '  max_jobs_per_user = 0;\n};\n')
        d.proc.send_signal(signal.SIGHUP)
        refused = ("Configuration refused, keeping the running one: %s:4: "
                   "limits.max_jobs_per_user: 0 is out of range 1..100000" % path)
        wait_for(lambda: refused in d.read_log(), timeout=20, what="the refused reload's message")
        self.assertIsNone(d.proc.poll(), "the daemon exited on a bad file")
        self.assertNotIn("reloaded", d.read_log())
        self.assertEqual(d.call("Info")["interval_secs"], 0.3)
        ivs = actual_intervals_ms(d)
        self.assertTrue(all(0 < v < 2500 for v in ivs) and sum(ivs) / len(ivs) >= 200,
                        "not sampling every 300ms after a refused reload: %s" % ivs)
        self.assertEqual(send_padded_ping(d)["error"], "org.varlink.service.InvalidParameter",
                         "max_message_size changed by a refused file")

        # A good file: applied (max_message_size takes effect for new connections).
        self.conf('interval = "300ms";\nlimits: {\n  max_message_size = "4K";\n};\n')
        d.proc.send_signal(signal.SIGHUP)
        reloaded = "Configuration %s reloaded: limits.max_message_size" % path
        wait_for(lambda: reloaded in d.read_log(), timeout=20, what="the reload's message")
        r = send_padded_ping(d)
        self.assertEqual(r["error"], IFACE + ".InvalidRequest", r)
        self.assertIn("longer than 4096 bytes", r["parameters"]["reason"])
        self.assertEqual(d.call("Ping"), {})
        self.assertEqual(d.call("Info")["interval_secs"], 0.3)
        d.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
