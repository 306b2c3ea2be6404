"""Third-party varlink peers against the daemon: the python3-varlink CLI and
library (Debian bookworm-backports, installed by
scripts/setup.d/30-python3-varlink.sh into Debian's /usr/bin/python3), and
the IDL grammar of varlink-go's interface generator.

The python library parses the IDL served by GetInterfaceDescription before
every call and filters every reply through the declared types (dropping
undeclared fields, rejecting wrong types), so comparing its view of a reply
with the raw reply checks that the daemon answers exactly what the IDL
says."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import IFACE, DaemonTest, wait_for  # noqa: E402

PYTHON = "/usr/bin/python3"    # Debian's: the pyenv python3 on PATH lacks the module
SETUP = "scripts/setup.d/30-python3-varlink.sh"

try:
    import varlink
except ImportError:
    varlink = None

METHODS = ["Ping", "Info", "GetHostInfo", "GetHostSample", "StreamHostSamples", "StartJob", "FinishJob",
           "StopJob", "ListJobs", "GetJob", "GetJobSamples", "StreamJobs", "SetNotifyDefaults", "GetNotifyDefaults",
           "GetGpus", "GetUsage", "GetJobProcesses", "GetHostCpuTimes", "GetJobSeries"]
IDL_PATH = os.path.join(os.environ.get("RT_SOURCE_DIR", "."), "daemon", "api", IFACE + ".varlink")


def cli(*args, timeout=60):
    p = subprocess.run([PYTHON, "-m", "varlink.cli"] + list(args), capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def json_documents(text):
    """The CLI prints one indented JSON document per reply."""
    dec, out, i = json.JSONDecoder(), [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return out
        obj, i = dec.raw_decode(text, i)
        out.append(obj)


def strip_none(v, opaque=("sample", "samples")):
    """The library drops null fields of declared types; compare raw replies
    the same way (values of type object, like samples, pass untouched)."""
    if isinstance(v, dict):
        return {k: (x if k in opaque else strip_none(x)) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [strip_none(x) for x in v]
    return v


class VarlinkPeer(DaemonTest):
    # GetHostInfo's cloud discovery asks a closed port on loopback.
    daemon_env = {"RESOURCE_TRACKERD_TEST_IMDS_BASE": "http://127.0.0.1:9",
                  "RESOURCE_TRACKERD_TEST_ALICLOUD_BASE": "http://127.0.0.1:9"}

    @classmethod
    def setUpClass(cls):
        if varlink is None:
            raise AssertionError("python3-varlink is not installed for %s: run %s" % (PYTHON, SETUP))

    def addr(self):
        return "unix:" + self.d.socket

    def spawn(self, *cmd):
        p = subprocess.Popen(list(cmd))
        self.addCleanup(lambda: (p.kill(), p.wait()))
        return p

    # ---- the CLI ----

    def test_cli_info(self):
        rc, out, err = cli("info", self.addr())
        self.assertEqual(rc, 0, err)
        lines = [ln.strip() for ln in out.splitlines()]
        self.assertIn("Vendor: Spare Cores", lines)
        self.assertIn("Product: resource-trackerd", lines)
        i = lines.index("Interfaces:")
        self.assertEqual(sorted(lines[i + 1:i + 3]), sorted(["org.varlink.service", IFACE]))

    def test_cli_help_prints_the_idl(self):
        rc, out, err = cli("help", self.addr() + "/" + IFACE)
        self.assertEqual(rc, 0, err)
        with open(IDL_PATH) as f:
            self.assertEqual(out.strip(), f.read().strip())
        rc, out, err = cli("help", self.addr() + "/org.varlink.service")
        self.assertEqual(rc, 0, err)
        self.assertIn("method GetInterfaceDescription(interface: string) -> (description: string)", out)

    def test_cli_call(self):
        rc, out, err = cli("call", self.addr() + "/" + IFACE + ".ListJobs", "{}")
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(json.loads(out), {"jobs": [], "next_before_id": None})
        p = self.spawn("sleep", "30")
        job = self.d.call("StartJob", {"pid": p.pid, "name": "cli"})["job"]
        rc, out, err = cli("call", self.addr() + "/" + IFACE + ".ListJobs", '{"running_only": true}')
        self.assertEqual((rc, err), (0, ""))
        jobs = json.loads(out)["jobs"]
        self.assertEqual([(j["id"], j["name"], j["pid"]) for j in jobs], [(job["id"], "cli", p.pid)])
        # An error reply is printed as such.
        rc, out, err = cli("call", self.addr() + "/" + IFACE + ".GetJob", '{"id": 999}')
        self.assertIn(IFACE + ".NoSuchJob", err)
        self.assertEqual(out, "")

    def test_cli_call_more(self):
        p = self.spawn("sleep", "1")
        job = self.d.call("StartJob", {"pid": p.pid})["job"]
        rc, out, err = cli("call", "--more", self.addr() + "/" + IFACE + ".GetJobSamples",
                           json.dumps({"id": job["id"], "follow": True}))
        self.assertEqual((rc, err), (0, ""))
        replies = json_documents(out)
        self.assertGreater(len(replies), 1)
        self.assertTrue(replies[-1]["ended"])
        samples = [s for r in replies for s in r["samples"]]
        self.assertEqual(replies[-1]["next_offset"], len(samples))
        total = self.d.call("GetJob", {"id": job["id"]})["job"]["summary"]["samples"]
        self.assertEqual(len(samples), total)
        self.assertTrue(all(s["job_id"] == job["id"] for s in samples))

    def test_cli_host_stream(self):
        # An endless stream: read three samples, then hang up.
        proc = subprocess.Popen([PYTHON, "-m", "varlink.cli", "call", "-m", self.addr() + "/" + IFACE +
                                 ".StreamHostSamples", "{}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            buf, docs = "", []
            deadline = time.monotonic() + 30
            while len(docs) < 3 and time.monotonic() < deadline:
                line = proc.stdout.readline().decode()
                if not line:
                    self.fail("the CLI ended: " + proc.stderr.read().decode())
                buf += line
                if line.rstrip() == "}":    # end of one indented document
                    docs.append(json.loads(buf))
                    buf = ""
        finally:
            proc.kill()
            proc.communicate()
        self.assertEqual(len(docs), 3)
        stamps = [d["sample"]["timestamp_secs"] for d in docs]
        self.assertEqual(stamps, sorted(stamps))
        self.assertTrue(all("cpu" in d["sample"] for d in docs))
        self.assertEqual(self.d.call("Ping"), {})

    # ---- the library ----

    def test_library_runs_a_job(self):
        p = self.spawn("sh", "-c", "sleep 1.2")
        with varlink.Client(address=self.addr()) as client, client.open(IFACE) as con:
            self.assertEqual(con.Ping(), {})
            md = {"project_name": "peer", "tags": ["k=v"], "command": ["sh", "-c", "sleep 1.2"]}
            job = con.StartJob(pid=p.pid, name="peer", metadata=md)["job"]
            self.assertEqual((job["name"], job["pid"], job["state"]), ("peer", p.pid, "running"))
            self.assertEqual(job["metadata"], md)
            samples = []
            for r in con.GetJobSamples(id=job["id"], follow=True, _more=True):
                samples += r["samples"]
            self.assertTrue(r["ended"])
            got = con.GetJob(name="peer")["job"]
            self.assertEqual(got["state"], "finished")
            self.assertEqual(got["exit_code"], 0)
            self.assertEqual(got["summary"]["samples"], len(samples))
            csv = con.GetJobSamples(id=job["id"], format="csv")["csv"]
            self.assertEqual(len(csv.splitlines()), len(samples) + 1)
            with self.assertRaises(varlink.VarlinkError) as e:
                con.GetJob(id=999)
            self.assertEqual(e.exception.error(), IFACE + ".NoSuchJob")
            self.assertEqual(e.exception.parameters(), {"id": 999, "name": None})

    def test_library_replies_match_the_idl(self):
        p = self.spawn("sleep", "30")
        job_id = self.d.call("StartJob", {"pid": p.pid, "name": "typed", "metadata": {"team": "t"}})["job"]["id"]
        wait_for(lambda: self.d.call("GetJob", {"id": job_id})["job"]["summary"]["samples"] >= 2)
        self.d.call("StopJob", {"id": job_id})
        wait_for(lambda: self.d.call("GetHostInfo")["cloud_discovery"] == "done", what="cloud discovery")
        calls = [("Info", {}), ("GetHostInfo", {}), ("GetHostSample", {}), ("ListJobs", {}),
                 ("GetJob", {"id": job_id}),
                 ("GetJobSamples", {"id": job_id, "limit": 2}),
                 ("GetJobSamples", {"id": job_id, "format": "csv"})]
        with varlink.Client(address=self.addr()) as client, client.open(IFACE) as con:
            for method, params in calls:
                typed = getattr(con, method)(**params)
                raw = self.d.call(method, params)
                # Volatile fields differ between the two calls.
                for r in (typed, raw):
                    r.pop("uptime_secs", None)
                    r.pop("sample", None)
                self.assertEqual(typed, strip_none(raw), method)
        svc = varlink.Client(address=self.addr())
        try:
            with svc.open("org.varlink.service") as con:
                info = con.GetInfo()
                self.assertEqual(info, self.d.call("org.varlink.service.GetInfo"))
        finally:
            svc.cleanup()

    def test_library_parses_the_idl(self):
        with open(IDL_PATH) as f:
            iface = varlink.Interface(f.read())
        self.assertEqual(iface.name, IFACE)
        methods = [n for n, m in iface.members.items() if type(m).__name__ == "_Method"]
        self.assertEqual(sorted(methods), sorted(METHODS))
        for m in METHODS:
            self.assertEqual(iface.get_method(m).name, m)


class GoIdlGrammar(unittest.TestCase):
    """varlink-go's parser (Debian's 0.4.0) as a second, independent check of
    the IDL grammar. It predates the spec change that allowed upper case in
    interface names (varlink.github.io#19, varlink/go#29), so the name is
    lower-cased for it; python3-varlink and systemd accept it as is."""

    def test_go_parses_the_idl(self):
        gen = shutil.which("varlink-go-interface-generator")
        self.assertIsNotNone(gen, "varlink-go is not installed: run " + SETUP)
        with open(IDL_PATH) as f:
            text = f.read()
        name = IFACE.lower()
        tmp = tempfile.mkdtemp(prefix="rt-idl-")
        try:
            path = os.path.join(tmp, name + ".varlink")
            with open(path, "w") as f:
                f.write(text.replace("interface " + IFACE, "interface " + name))
            p = subprocess.run([gen, path], capture_output=True, cwd=tmp, timeout=60)
            self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())
            with open(os.path.join(tmp, name.replace(".", "") + ".go")) as f:
                go = f.read()
            # Every method, type and error made it into the generated code.
            for m in METHODS:
                self.assertIn("type %s_methods struct{}" % m, go)
            for t in ("JobMetadata", "JobSummary", "JobCurrent", "Upload", "Job", "HostFacts", "CloudFacts",
                      "NoSuchJob", "LimitExceeded", "InvalidRequest"):
                self.assertIn("type %s struct" % t, go)
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main(verbosity=2)
