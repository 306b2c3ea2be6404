"""The bash completion (packaging/bash-completion/resource-trackerctl) with
bash-completion's own helpers, as bash calls it: commands, options, option
values, and the ids and names of the caller's jobs from a real daemon (real
users: never another user's), also from the daemon --socket names on the
line; nothing, quickly and silently, when no daemon answers."""

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import CTL, Daemon, UsersDaemonTest, run_ctl, setpriv, spawn_as, wait_for, world_path  # noqa: E402

SOURCE = os.environ.get("RT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
COMPLETION = os.path.join(SOURCE, "packaging", "bash-completion", "resource-trackerctl")
BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"

# Completes each line of stdin (the words of a command line, the last one
# being completed; a line starting with a tab: the words as typed, quotes
# kept, separated by tabs) as bash does on TAB: COMP_WORDS split at '=' as
# COMP_WORDBREAKS has it, COMP_CWORD, COMP_LINE, COMP_POINT; then calls the
# function `complete -p` names and prints COMPREPLY sorted (as bash shows
# it; in its order under compopt -o nosort), one line per command line. compopt is a builtin only while bash completes.
DRIVER = r"""
source "$1"; source "$2"
compopt() { [[ "$*" == "-o nosort" ]] && nosort=1; }
read -r -a spec <<<"$(complete -p resource-trackerctl)"
fn=${spec[2]}
while IFS= read -r line; do
  if [[ $line == $'\t'* ]]; then  # words as typed, quotes kept, between tabs
    IFS=$'\t' read -r -a typed <<<"${line#$'\t'}"
  else
    eval "typed=($line)"
  fi
  COMP_WORDS=()
  for w in "${typed[@]}"; do
    while [[ $w == *=* ]]; do COMP_WORDS+=("${w%%=*}" "="); w=${w#*=}; done
    COMP_WORDS+=("$w")
  done
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE="${typed[*]}"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
  nosort=
  "$fn" resource-trackerctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
  printf '%s\n' "$(printf '%s\n' "${COMPREPLY[@]}" | if [ -n "$nosort" ]; then cat; else sort; fi |
                    tr '\n' ' ' | sed 's/ $//')"
done
"""


class Completion(UsersDaemonTest):
    roles = ("alice", "bob")

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(BASH_COMPLETION):
            raise AssertionError("bash-completion is not installed (scripts/setup.d/70-bash-completion.sh)")
        cls.tmp = tempfile.mkdtemp(prefix="rt-comp-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        os.chmod(cls.tmp, 0o755)
        # The client under the name bash completes, first on PATH.
        cls.bin = os.path.join(cls.tmp, "bin")
        os.mkdir(cls.bin)
        os.chmod(cls.bin, 0o755)
        shutil.copy2(world_path(CTL), os.path.join(cls.bin, "resource-trackerctl"))
        cls.completion = os.path.join(cls.tmp, "resource-trackerctl.bash")  # users can read it here
        shutil.copy(COMPLETION, cls.completion)
        os.chmod(cls.completion, 0o644)
        cls.driver = os.path.join(cls.tmp, "driver.sh")
        with open(cls.driver, "w") as f:
            f.write(DRIVER)
        os.chmod(cls.driver, 0o644)
        super().setUpClass()

    def complete(self, *lines, user=None, socket=None, env=None):
        """COMPREPLY for each command line (a string of shell words)."""
        e = dict(os.environ, PATH=self.bin + ":" + os.environ["PATH"],
                 RESOURCE_TRACKER_SOCKET=socket or self.d.socket, **(env or {}))
        cmd = ["bash", self.driver, BASH_COMPLETION, self.completion]
        if user:
            cmd = setpriv(user) + cmd
        p = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True, env=e,
                           timeout=60, cwd=self.tmp)
        self.assertEqual((p.returncode, p.stderr), (0, ""), lines)
        out = p.stdout.split("\n")[:-1]
        self.assertEqual(len(out), len(lines), p.stdout)
        return [o.split() for o in out]

    def sleeper(self, user):
        p = spawn_as(user, ["sleep", "60"])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        uid = pwd.getpwnam(user).pw_uid
        wait_for(lambda: os.stat("/proc/%d" % p.pid).st_uid == uid, what="the process of " + user)
        return p

    def start(self, user, name):
        p = self.sleeper(user)
        return int(run_ctl(self.d, "start", "--pid", str(p.pid), "--name", name, user=user, check=0)[1])

    def test_registered(self):
        p = subprocess.run(["bash", "-c", 'source "$1"; source "$2"; complete -p resource-trackerctl', "-",
                            BASH_COMPLETION, COMPLETION], capture_output=True, text=True, check=True)
        self.assertEqual(p.stdout, "complete -F _resource_trackerctl resource-trackerctl\n")

    def test_commands_options_and_values(self):
        got = self.complete(
            "resource-trackerctl ''",
            "resource-trackerctl st",
            "resource-trackerctl --socket /x j",
            "resource-trackerctl --",
            "resource-trackerctl jobs --",
            "resource-trackerctl jobs --s",
            "resource-trackerctl run --form",
            "resource-trackerctl run --format ''",
            "resource-trackerctl jobs -f ''",
            "resource-trackerctl --format ''",
            "resource-trackerctl jobs --format=c",
            "resource-trackerctl samples x --f",
            "resource-trackerctl help ''",
            "resource-trackerctl help sam",
            "resource-trackerctl jobs --limit ''",
            "resource-trackerctl info --json ''",
        )
        self.assertEqual(got, [
            ["gpus", "help", "info", "jobs", "metrics", "notify", "recommend", "report", "run", "samples", "start",
             "status", "stop", "top", "usage", "version"],
            ["start", "status", "stop"],
            ["jobs"],
            ["--format", "--help", "--json", "--socket", "--version"],
            ["--columns", "--format", "--help", "--json", "--limit", "--long", "--name", "--running", "--since",
             "--user"],
            ["--since"],
            ["--format"],
            ["csv", "json"],
            ["csv", "json", "text"],
            ["csv", "json", "text"],
            ["csv"],
            ["--follow", "--format"],
            ["gpus", "help", "info", "jobs", "metrics", "notify", "recommend", "report", "run", "samples", "start",
             "status", "stop", "top", "usage", "version"],
            ["samples"],
            [],
            [],
        ])

    def test_files_pids_users_and_commands(self):
        for name in ("out-a.csv", "out-b.csv", "other"):
            open(os.path.join(self.tmp, name), "w").close()
        got = self.complete(
            "resource-trackerctl run -o out-",
            "resource-trackerctl --socket=oth",
            "resource-trackerctl jobs --user " + self.alice[:-2],
            "resource-trackerctl run -qn x -- bas",
            "resource-trackerctl run -q --job-name=x bas",
            "resource-trackerctl run -qn x bash --ver",
            "resource-trackerctl run -i 1 -- ls ot",
        )
        self.assertEqual(got[0], ["out-a.csv", "out-b.csv"])
        self.assertEqual(got[1], ["other"])  # bash completes what follows '='

        self.assertEqual(got[2], [self.alice])
        self.assertIn("bash", got[3])
        self.assertIn("bash", got[4])    # "--job-name=x" is one of bash's words, three of COMP_WORDS
        self.assertIn("--version", got[5])  # bash's own completion of its options
        self.assertEqual(got[6], ["other"])
        pids = self.complete("resource-trackerctl start --pid ''")[0]
        self.assertIn(str(os.getpid()), pids)

    def test_jobs_are_the_callers_own(self):
        a1 = self.start(self.alice, "alice-train")
        a2 = self.start(self.alice, "alice-eval")
        b1 = self.start(self.bob, "bob-train")
        run_ctl(self.d, "stop", str(a2), check=0)
        got = self.complete("resource-trackerctl status ''", "resource-trackerctl stop ''",
                            "resource-trackerctl samples -F ''", "resource-trackerctl samples ali",
                            "resource-trackerctl jobs --name ''", "resource-trackerctl status alice-train ''",
                            "resource-trackerctl stop -- ''", user=self.alice)
        # Newest first, as bash shows them: the ids, then the names.
        self.assertEqual(got[0], [str(a2), str(a1), "alice-eval", "alice-train"])
        self.assertEqual(got[1], [str(a1), "alice-train"])   # stop: running jobs
        self.assertEqual(got[2], got[0])
        self.assertEqual(got[3], ["alice-eval", "alice-train"])
        self.assertEqual(got[4], ["alice-eval", "alice-train"])      # names only
        self.assertEqual(got[5], [])                                 # one JOB
        self.assertEqual(got[6], got[1])
        self.assertEqual(self.complete("resource-trackerctl status ''", user=self.bob)[0], [str(b1), "bob-train"])
        # root, an administrator, sees every job
        self.assertEqual(set(self.complete("resource-trackerctl stop ''")[0]),
                         {str(a1), str(b1), "alice-train", "bob-train"})

    def test_ids_newest_first_not_as_text(self):
        d = Daemon(interval=0.2).start()  # its own: ids from 1
        self.addCleanup(d.cleanup)
        self.addCleanup(d.stop)
        ids = [d.call("StartJob", {"pid": self.sleeper(self.alice).pid, "name": "j%d" % i})["job"]["id"]
               for i in range(12)]
        got = self.complete("resource-trackerctl status ''", "resource-trackerctl status 1", socket=d.socket)
        self.assertEqual(got[0], [str(i) for i in reversed(ids)] + ["j%d" % i for i in reversed(range(12))])
        self.assertEqual(got[1], ["12", "11", "10", "1"])  # not "1 10 11 12"

    def test_names_with_spaces_quotes_and_equals(self):
        self.start(self.alice, "train run")
        self.start(self.alice, "lr=0.1")
        self.start(self.alice, "it's")
        typed = ["'train r", '"train r', "train\\ r", "train", "lr=0", "it"]
        got = self.complete(*("\tresource-trackerctl\tstatus\t" + w for w in typed), user=self.alice)
        # One shell word each, whatever the quoting typed so far; after '=' what bash replaces.
        self.assertEqual(got, [["train\\", "run"]] * 4 + [["0.1"], ["it\\'s"]])

    def test_the_daemon_named_on_the_line(self):
        other = Daemon(interval=0.2).start()
        self.addCleanup(other.cleanup)
        self.addCleanup(other.stop)
        p = self.sleeper(self.alice)
        jid = int(run_ctl(other, "start", "--pid", str(p.pid), "--name", "elsewhere", check=0)[1])
        got = self.complete("resource-trackerctl --socket %s status ''" % other.socket,
                            "resource-trackerctl --socket=%s stop ''" % other.socket)
        self.assertEqual(got, [[str(jid), "elsewhere"]] * 2)

    def test_no_daemon_no_jobs_no_message_no_wait(self):
        t = time.monotonic()
        got = self.complete("resource-trackerctl status ''", "resource-trackerctl jobs --name x",
                            "resource-trackerctl st", socket=os.path.join(self.tmp, "nobody.sock"))
        self.assertLess(time.monotonic() - t, 10)
        self.assertEqual(got, [[], [], ["start", "status", "stop"]])  # complete() checked stderr is empty
        # A daemon that accepts but never answers costs at most its timeout.
        import socket as so
        path = os.path.join(self.tmp, "mute.sock")
        mute = so.socket(so.AF_UNIX, so.SOCK_STREAM)
        mute.bind(path)
        mute.listen(8)
        self.addCleanup(mute.close)
        t = time.monotonic()
        out = subprocess.run([CTL, "__complete", "2", "resource-trackerctl", "status", ""], capture_output=True,
                             text=True, env=dict(os.environ, RESOURCE_TRACKER_SOCKET=path), timeout=30)
        self.assertLess(time.monotonic() - t, 3.0)
        self.assertEqual((out.returncode, out.stdout, out.stderr), (0, "ordered\n", ""))


if __name__ == "__main__":
    unittest.main(verbosity=2)
