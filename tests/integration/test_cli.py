"""resource-trackerctl's command line (getopt_long): messages that name the
option and its rule (also for values the daemon refuses), bundled short
options, --json and --format wherever the other works, help and version, and
every option documented in --help and the man page."""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import CTL, DaemonTest, VarlinkError, read_json_lines, run_ctl, split_summary, wait_for  # noqa: E402

NAME_RULE = "a name is 1-128 characters of UTF-8, no control characters, and not all digits"
TAG_RULE = "a tag is KEY=VALUE, KEY not empty, at most 4096 bytes"
INVALID = "org.varlink.service.InvalidParameter"
PID_RULE = "a process ID is a whole number above 0"
SOURCE = os.environ.get("RT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
VERBS = ["run", "start", "stop", "jobs", "status", "samples", "gpus", "usage", "info", "notify", "report", "recommend",
         "top", "metrics", "help", "version"]


def options_of(verb):
    """The long options the client offers for a verb (its completion)."""
    out = subprocess.run([CTL, "__complete", "2", "resource-trackerctl", verb, "--"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out[0] == "words", out
    return out[1:]


class Messages(unittest.TestCase):
    """Errors found before any daemon is asked: no daemon runs here."""

    def ctl(self, *args, env=None):
        e = {"RESOURCE_TRACKER_SOCKET": "/nonexistent/rt.sock"}
        e.update(env or {})
        p = subprocess.run([CTL] + list(args), env=dict(os.environ, **e), capture_output=True, text=True, timeout=30)
        return p.returncode, p.stdout, p.stderr

    def refused(self, args, message, verb=None, hint=None):
        """Exit status 2, nothing on stdout, the message, and where help is."""
        rc, out, err = self.ctl(*args)
        self.assertEqual((rc, out), (2, ""), "%s: %s" % (args, err))
        hint = hint or "resource-trackerctl %s--help" % (verb + " " if verb else "")
        self.assertEqual(err.splitlines(), ["resource-trackerctl: " + message, "Try '%s'." % hint], args)

    def test_missing_and_invalid_values_name_the_option_and_the_rule(self):
        self.refused(["start", "--pid"], "start: --pid needs a value: " + PID_RULE, "start")
        self.refused(["start", "-p"], "start: --pid needs a value: " + PID_RULE, "start")
        for bad in ("abc", "0", "-5", "12x", "99999999999"):
            self.refused(["start", "--pid", bad], "start: --pid '%s': %s" % (bad, PID_RULE), "start")
        self.refused(["start", "--pid=", ], "start: --pid '': " + PID_RULE, "start")
        for bad in ("0", "0.05", "abc", "-1", "3601", "nan"):
            self.refused(["run", "--interval", bad, "--", "true"],
                         "run: --interval '%s': an interval is a number of seconds from 0.1 to 3600" % bad, "run")
        self.refused(["run", "-i"], "run: --interval needs a value: an interval is a number of seconds from 0.1 "
                     "to 3600", "run")
        self.refused(["start", "-p1", "--tag", "novalue"], "start: --tag 'novalue': " + TAG_RULE, "start")
        self.refused(["run", "-o"], "run: --output needs a value (FILE)", "run")
        self.refused(["jobs", "--limit", "0"], "jobs: --limit '0': a limit is a whole number above 0", "jobs")
        self.refused(["jobs", "-u", "no-such-user-here"],
                     "jobs: --user 'no-such-user-here': a USER is a user name or a numeric uid", "jobs")
        since = ("a time is a date/time (2026-01-31, \"2026-01-31 14:00\", 14:00, today, @UNIX-SECONDS) or a "
                 "duration ago (90s, 30m, 2h, 3d, 1w, 1h30m)")
        for bad in ("2x", "yesterday-ish", "2026-13-45", "25:00", "@", "h"):
            self.refused(["jobs", "--since", bad], "jobs: --since '%s': %s" % (bad, since), "jobs")
        self.refused(["samples", "1", "--offset", "-1"],
                     "samples: --offset '-1': an offset is a whole number of samples, 0 or more", "samples")
        # A long value is shown cut, at a character boundary.
        self.refused(["start", "--pid", "é" * 60], "start: --pid '%s…': %s" % ("é" * 47, PID_RULE), "start")

    def test_unknown_ambiguous_and_misplaced_options(self):
        self.refused(["jobs", "--bogus"], "jobs: unknown option --bogus", "jobs")
        self.refused(["jobs", "--bogus=1"], "jobs: unknown option --bogus", "jobs")
        self.refused(["status", "-x"], "status: unknown option -x", "status")
        self.refused(["run", "-qx", "true"], "run: unknown option -x", "run")
        self.refused(["samples", "1", "--fo"], "samples: --fo is ambiguous: --follow, --format", "samples")
        self.refused(["info", "--json=yes"], "info: --json takes no value", "info")
        self.refused(["jobs", "--socket", "/x"],
                     "jobs: --socket goes before the command: resource-trackerctl --socket PATH jobs ...", "jobs")
        self.refused(["--bogus", "jobs"], "unknown option --bogus")
        self.refused(["--socket"], "--socket needs a value (PATH)")
        self.refused(["stop"], "stop: needs a JOB: a JOB is a job's id or its name", "stop")
        self.refused(["samples"], "samples: needs a JOB: a JOB is a job's id or its name", "samples")
        self.refused(["run"], "run: needs a COMMAND to run", "run")
        self.refused(["run", "-q", "--"], "run: needs a COMMAND to run", "run")
        self.refused(["status", "a", "b"], "status: unexpected argument 'b'", "status")
        self.refused(["info", "extra"], "info: unexpected argument 'extra'", "info")
        self.refused(["start", "--pid", "1", "extra"], "start: unexpected argument 'extra'", "start")
        self.refused(["start"], "start: needs one of --pid PID, --cgroup PATH, --unit NAME, --container ID: what to track", "start")
        self.refused(["no-such-verb"], "unknown command 'no-such-verb'", hint="resource-trackerctl help")
        rc, out, err = self.ctl()
        self.assertEqual((rc, out), (2, ""))
        self.assertTrue(err.startswith("resource-trackerctl: a COMMAND is missing\nUsage: "), err)

    def test_formats_a_verb_does_not_print(self):
        self.refused(["--format", "xml", "jobs"], "--format 'xml': a format is text, json or csv")
        self.refused(["jobs", "--format", "xml"], "jobs: --format 'xml': jobs prints text, json or csv", "jobs")
        self.refused(["info", "--format", "csv"], "info: --format 'csv': info prints text or json", "info")
        self.refused(["--format", "csv", "info"], "info: --format csv: info prints text or json", "info")
        self.refused(["samples", "1", "-f", "text"], "samples: --format 'text': samples prints json or csv", "samples")
        self.refused(["--format=text", "samples", "1"], "samples: --format text: samples prints json or csv",
                     "samples")
        self.refused(["run", "--format", "xml", "--", "true"], "run: --format 'xml': run prints json or csv", "run")
        self.refused(["stop", "-f", "csv", "x"], "stop: --format 'csv': stop prints text or json", "stop")
        self.refused(["--json", "version"], "version: version takes no --json or --format", "version")
        self.refused(["--json", "help"], "help: help takes no --json or --format", "help")
        self.refused(["version", "--json"], "version: version takes no --json or --format", "version")
        self.refused(["version", "--format=csv"], "version: version takes no --json or --format", "version")
        self.refused(["run", "--format"], "run: --format needs a value: run prints json or csv", "run")

    def test_help_and_version(self):
        rc, overview, err = self.ctl("--help")
        self.assertEqual((rc, err), (0, ""))
        self.assertTrue(overview.startswith("Usage: resource-trackerctl [GLOBAL OPTIONS] COMMAND"), overview)
        for args in (["-h"], ["help"]):
            self.assertEqual(self.ctl(*args), (0, overview, ""), args)
        listed = re.findall(r"^  ([a-z_]+)", overview.split("Commands:\n")[1].split("\n\n")[0], re.M)
        self.assertEqual(listed, VERBS)
        for verb in VERBS:
            rc, text, err = self.ctl(verb, "--help")
            self.assertEqual((rc, err), (0, ""), verb)
            self.assertTrue(text.startswith("Usage: resource-trackerctl " + verb), text)
            self.assertEqual(self.ctl("help", verb), (0, text, ""), verb)
            self.assertEqual(self.ctl(verb, "-h"), (0, text, ""), verb)
        self.refused(["help", "bogus"], "help: unknown command 'bogus'", hint="resource-trackerctl help")
        self.refused(["help", "run", "jobs"], "help: unexpected argument 'jobs'", "help")
        with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
            version = re.search(r"project\(resource-tracker VERSION ([0-9.]+)", f.read()).group(1)
        for args in (["-V"], ["--version"], ["version"]):
            self.assertEqual(self.ctl(*args), (0, "resource-trackerctl %s\n" % version, ""), args)
        self.refused(["version", "x"], "version: unexpected argument 'x'", "version")

    def test_every_option_is_documented(self):
        with open(os.path.join(SOURCE, "docs", "man", "resource-trackerctl.1")) as f:
            man = f.read().replace("\\-", "-")
        with open(os.path.join(SOURCE, "docs", "usage.md")) as f:
            usage = f.read()
        overview = self.ctl("--help")[1]
        def has(text, opt):
            return re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(opt), text) is not None
        for verb in VERBS:
            text = self.ctl(verb, "--help")[1]
            for opt in options_of(verb):
                self.assertTrue(has(text, opt), "%s --help lacks %s" % (verb, opt))
                self.assertTrue(has(man, opt), "the man page lacks %s %s" % (verb, opt))
                self.assertTrue(has(usage, opt), "docs/usage.md lacks %s %s" % (verb, opt))
        for opt in ("--socket", "--json", "--format", "--help", "--version", "-V"):
            self.assertTrue(has(overview, opt) and has(man, opt) and has(usage, opt), opt)


class WithDaemon(DaemonTest):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="rt-cli-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.tmp]))

    def sleeper(self):
        p = subprocess.Popen(["sleep", "60"])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        return p

    def test_a_bad_label_warns_and_the_command_runs(self):
        marker = os.path.join(self.tmp, "ran")
        cases = [
            (["--job-name", "123"], {}, "--job-name '123': " + NAME_RULE + "; the job has no name"),
            (["-qn", "a\tb"], {}, "--job-name 'a\\tb': " + NAME_RULE + "; the job has no name"),
            ([], {"TRACKER_JOB_NAME": "42"}, "TRACKER_JOB_NAME '42': " + NAME_RULE + "; the job has no name"),
            (["--tag", "=x"], {}, "--tag '=x': " + TAG_RULE + "; the tag is left out"),
            (["--tag", "novalue"], {}, "--tag 'novalue': " + TAG_RULE + "; the tag is left out"),
            (["--project-name", "x" * 5000], {},
             "--project-name '%s…': a metadata value is at most 4096 bytes; it is left out" % ("x" * 47)),
            ([], {"TRACKER_TEAM": "t" * 4097},
             "TRACKER_TEAM '%s…': a metadata value is at most 4096 bytes; it is left out" % ("t" * 47)),
        ]
        for i, (args, env, message) in enumerate(cases):
            rc, out, err = run_ctl(self.d, "run", "-q", *args, "--tag", "case=%d" % i, "--", "touch", marker,
                                   env=env)
            self.assertEqual((rc, out, err), (0, "", "resource-trackerctl: warn: %s\n" % message), args)
            self.assertTrue(os.path.exists(marker), "the command did not run: %s" % args)
            os.unlink(marker)
            [job] = [j for j in self.d.call("ListJobs")["jobs"] if "case=%d" % i in j["metadata"]["tags"]]
            self.assertEqual(job["state"], "finished")
            self.assertNotIn("project_name", job["metadata"])
            self.assertEqual(job["metadata"]["tags"], ["case=%d" % i])
        # Names are labels: spaces, any script, punctuation (the Rust CLI takes any string).
        for name in ("train run", "résumé", "日本語 β=0.9", "lr=0.1,bs=64", "x" * 128):
            rc, out, err = run_ctl(self.d, "run", "-q", "--", "true", env={"TRACKER_JOB_NAME": name})
            self.assertEqual((rc, err), (0, ""), name)
            self.assertEqual(self.d.call("GetJob", {"name": name})["job"]["name"], name)
        self.assertEqual(run_ctl(self.d, "jobs", "--name", "train run", "--format", "csv")[1].count("train run"), 1)

    def test_values_refused_name_their_option_and_rule(self):
        marker = os.path.join(self.tmp, "ran")
        cases = [
            (["run", "-q", "--", "touch", marker], {"SENTINEL_API_TOKEN": "t", "TRACKER_UPLOAD_INTERVAL": "100000"},
             "TRACKER_UPLOAD_INTERVAL '100000': an upload interval is a whole number of seconds from 1 to 86400"),
            (["run", "-q", "--", "touch", marker], {"SENTINEL_API_TOKEN": "t", "SENTINEL_API_URL": "ftp://x"},
             "SENTINEL_API_URL 'ftp://x': a Sentinel API URL starts with http:// or https://"),
        ]
        for args, env, message in cases:
            rc, out, err = run_ctl(self.d, *args, env=env)
            self.assertEqual((rc, out, err), (2, "", "resource-trackerctl: %s\n" % message), args)
            self.assertFalse(os.path.exists(marker), "the command ran: %s" % args)
        # start has no command to keep running: a bad label is refused.
        p = self.sleeper()
        for args, message in ((["--name", "9"], "--name '9': " + NAME_RULE),
                              (["--tag", "=x"], "--tag '=x': " + TAG_RULE)):
            rc, _, err = run_ctl(self.d, "start", "--pid", str(p.pid), *args)
            self.assertEqual((rc, err), (2, "resource-trackerctl: start: %s\nTry 'resource-trackerctl start --help'.\n"
                                         % message), args)
        self.assertEqual(self.d.call("ListJobs")["jobs"], [])
        # The daemon holds the same rule.
        for name in ("9", "a\nb", "x" * 129):
            with self.assertRaises(VarlinkError) as e:
                self.d.call("StartJob", {"pid": p.pid, "name": name})
            self.assertEqual((e.exception.error, e.exception.parameters), (INVALID, {"parameter": "name"}), name)
        self.assertEqual(self.d.call("StartJob", {"pid": p.pid, "name": "y" * 128})["job"]["name"], "y" * 128)

    def test_bundled_short_options(self):
        rc, out, err = run_ctl(self.d, "run", "-qn", "bundled", "-i0.4", "true")
        self.assertEqual((rc, out, err), (0, "", ""))
        job = self.d.call("GetJob", {"name": "bundled"})["job"]
        self.assertEqual((job["interval_secs"], job["metadata"]["command"]), (0.4, ["true"]))
        out_file = os.path.join(self.tmp, "s.csv")
        rc, _, err = run_ctl(self.d, "run", "-nbundle2", "-fcsv", "-o", out_file, "--", "sleep", "0.5")
        self.assertEqual((rc, split_summary(err)[0]), (0, ""), "only the summary on stderr")
        with open(out_file) as f:
            self.assertTrue(f.readline().startswith("timestamp,system_processes,"))
        p = self.sleeper()
        jid = int(run_ctl(self.d, "start", "-p%d" % p.pid, "-nbund3", check=0)[1])
        self.assertEqual(self.d.call("GetJob", {"id": jid})["job"]["name"], "bund3")
        rows = run_ctl(self.d, "jobs", "-rl1", "-fcsv", check=0)[1].splitlines()
        self.assertEqual([r.split(",")[:2] for r in rows[1:]], [[str(jid), "bund3"]])
        lines = run_ctl(self.d, "samples", "-Ffcsv", "bundled", check=0)[1].splitlines()
        self.assertTrue(lines[0].startswith("timestamp,") and len(lines) >= 2, lines)

    def test_the_command_follows_runs_options(self):
        # The first word that is not an option starts the command (as the
        # Rust CLI); what follows it is the command's, options included.
        rc, _, err = run_ctl(self.d, "run", "-q", "-n", "nodash", "sh", "-c", "exit 4", "--json")
        self.assertEqual((rc, err), (4, ""))
        self.assertEqual(self.d.call("GetJob", {"name": "nodash"})["job"]["metadata"]["command"],
                         ["sh", "-c", "exit 4", "--json"])
        rc, _, err = run_ctl(self.d, "run", "-q", "--", "-n", "x")
        self.assertEqual(rc, 127, err)
        self.assertIn("cannot run -n", err)

    def test_json_and_format_are_accepted_wherever_the_other_is(self):
        p = self.sleeper()
        jid = json.loads(run_ctl(self.d, "start", "--pid", str(p.pid), "-n", "fmt", "--format", "json", check=0)[1])["id"]
        wait_for(lambda: self.d.call("GetJob", {"id": jid})["job"]["summary"]["samples"] >= 2, what="samples")
        spellings = (["--json", "{v}"], ["--format", "json", "{v}"], ["-f", "json", "{v}"], ["--format=json", "{v}"],
                     ["-fjson", "{v}"], ["{v}", "--json"], ["{v}", "--format", "json"], ["{v}", "-f", "json"],
                     ["{v}", "--format=json"])

        def key(verb, doc):
            # what stays put between two calls (figures of a running job move)
            if verb == "jobs":
                return [(j["id"], j["name"], j["state"]) for j in doc]
            if verb == "info":
                return (doc["version"], doc["caller_uid"], doc["socket"])
            if verb == "status":
                return sorted(doc)
            return (doc["job"]["id"], doc["job"]["name"]) if "job" in doc else doc
        for verb, args in (("jobs", []), ("info", []), ("status", []), ("status", ["fmt"])):
            docs = []
            for sp in spellings:
                argv = [a for s in sp for a in ([verb] + args if s == "{v}" else [s])]
                rc, out, err = run_ctl(self.d, *argv)
                self.assertEqual((rc, err), (0, ""), argv)
                docs.append(key(verb, json.loads(out)))
            self.assertEqual(docs, [docs[0]] * len(docs), verb)
            # text: the default (the host's first line holds the sample's time)
            text = run_ctl(self.d, verb, *args, check=0)[1].splitlines()[0].split(" at ")[0]
            self.assertEqual(run_ctl(self.d, verb, *args, "--format", "text", check=0)[1].splitlines()[0]
                             .split(" at ")[0], text, verb)
        # samples: --json is --format json (the default); csv either way round.
        run_ctl(self.d, "stop", "fmt", check=0)
        want = run_ctl(self.d, "samples", "fmt", check=0)[1]
        self.assertTrue(read_json_lines(want))
        for argv in (["samples", "fmt", "--json"], ["--json", "samples", "fmt"], ["samples", "-f", "json", "fmt"]):
            self.assertEqual(run_ctl(self.d, *argv, check=0)[1], want, argv)
        csv = run_ctl(self.d, "samples", "fmt", "--format", "csv", check=0)[1]
        for argv in (["--format", "csv", "samples", "fmt"], ["samples", "-fcsv", "fmt"]):
            self.assertEqual(run_ctl(self.d, *argv, check=0)[1], csv, argv)
        # stop's JSON likewise, and run's samples with --json.
        p2 = self.sleeper()
        run_ctl(self.d, "start", "--pid", str(p2.pid), "-n", "fmt2", check=0)
        self.assertEqual(json.loads(run_ctl(self.d, "--format", "json", "stop", "fmt2", check=0)[1])["state"],
                         "stopped")
        rc, out, err = run_ctl(self.d, "--json", "run", "-n", "runjson", "--", "sleep", "0.5")
        self.assertEqual((rc, out), (0, ""))
        self.assertTrue(read_json_lines(split_summary(err)[0]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
