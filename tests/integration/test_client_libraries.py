"""The client maps what a verb needs (docs/performance.md, "Client
start-up"): libcurl (report's Keeper prices) and ncurses (top's screen) are
modules the verbs that use them load, so run, jobs, status, version and the
completion start with json-c and libc alone. Checked on the program as
linked (ldd), on a running `run` (/proc/PID/maps), and on every file the
dynamic loader opens for a verb (LD_DEBUG=files), with report's Keeper
lookup as the verb that does load libcurl."""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import CTL, Daemon, run_ctl, wait_for  # noqa: E402

# libcurl and what it pulls in (TLS, Kerberos, LDAP …), ncurses and terminfo.
HEAVY = re.compile(r"/lib(curl|ncurses|tinfo|gnutls|ssl|crypto|gssapi|krb5|ldap|ssh2|rtmp|nghttp2)[^/]*\.so")


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def heavy(text):
    return sorted(set(m.group(0) for m in HEAVY.finditer(text)))


class ClientLibraries(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rt-libs-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.d = Daemon(interval=0.2).start()
        cls.addClassCleanup(cls.d.cleanup)
        cls.addClassCleanup(cls.d.stop)
        run_ctl(cls.d, "run", "-q", "-n", "lib", "--", "true", check=0)

    def loaded(self, *args, check=0):
        """The files the dynamic loader opened for one resource-trackerctl."""
        out = os.path.join(self.tmp, "ld-%s" % args[0].strip("_"))
        for f in glob.glob(out + ".*"):
            os.unlink(f)
        run_ctl(self.d, *args, env={"LD_DEBUG": "files", "LD_DEBUG_OUTPUT": out}, check=check)
        text = ""
        for f in glob.glob(out + ".*"):
            with open(f) as fh:
                text += fh.read()
        self.assertIn("libjson-c.so", text, "LD_DEBUG=files reports what is loaded")
        return text

    def test_the_program_links_neither_libcurl_nor_ncurses(self):
        ldd = subprocess.run(["ldd", CTL], capture_output=True, text=True, check=True).stdout
        self.assertIn("libjson-c.so", ldd)
        self.assertEqual(heavy(ldd), [], ldd)

    def test_a_running_run_maps_neither(self):
        p = subprocess.Popen([CTL, "run", "-q", "--", "sleep", "30"], stderr=subprocess.PIPE,
                             env=dict(os.environ, RESOURCE_TRACKER_SOCKET=self.d.socket))
        try:
            # The command runs once the job is registered: the client is at work.
            children = "/proc/%d/task/%d/children" % (p.pid, p.pid)
            wait_for(lambda: [c for c in read(children).split() if read("/proc/%s/comm" % c) == "sleep\n"],
                     what="the command running")
            maps = read("/proc/%d/maps" % p.pid)
        finally:
            p.terminate()  # forwarded to the command
            err = p.communicate(timeout=30)[1].decode()
        self.assertIn("libjson-c.so", maps)
        self.assertEqual(heavy(maps), [], maps)
        self.assertEqual(p.returncode, 128 + 15, err)

    def test_verbs_load_neither(self):
        for args in (["version"], ["help"], ["jobs"], ["status"], ["status", "lib"], ["samples", "lib"],
                     ["recommend", "lib"], ["run", "-q", "--", "true"], ["top", "--iterations", "1"],
                     ["__complete", "2", "resource-trackerctl", "status", ""],
                     ["report", "lib", "-o", os.path.join(self.tmp, "off.html"), "--keeper-url", "off"]):
            with self.subTest(args=args):
                text = self.loaded(*args)
                self.assertEqual(heavy(text), [])
                self.assertNotIn("ctl-", "".join(l for l in text.splitlines() if "file=" in l))

    def test_report_loads_libcurl_for_prices(self):
        # A closed port: the lookup fails, the report is made all the same.
        text = self.loaded("report", "lib", "-o", os.path.join(self.tmp, "prices.html"),
                           "--keeper-url", "http://127.0.0.1:9")
        self.assertRegex(text, r"file=\S*/ctl-http\.so \[0\];\s+dynamically loaded by")
        self.assertIn("/libcurl", " ".join(heavy(text)))


if __name__ == "__main__":
    unittest.main()
