"""Hostile clients against one daemon: malformed framing and JSON, wrong
types, unknown names, protocol flags in the wrong place, abusive sizes,
slow and vanishing clients, odd PIDs, connection floods.

Every case uses its own connection and asserts the exact outcome: a
specific varlink error (with its parameters) on a connection that keeps
working, a protocol error followed by the daemon hanging up, or a hang-up
without a reply. After every case a Ping on a fresh connection proves the
daemon still serves; the daemon must finally exit cleanly with no
sanitizer report. docs/protocol.md describes the behaviour asserted here."""

import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import IFACE, TOOLS, Connection, Daemon, VarlinkError, wait_for  # noqa: E402

MAX_MESSAGE = 1024 * 1024          # default max_message_bytes
MAX_CONN_PER_UID = 256             # default max_connections_per_uid
MAX_CONN = 1024                    # default max_connections
MAX_JOBS_PER_UID = 64              # default max_jobs_per_uid
NOBODY = 65534

SVC = "org.varlink.service"
INVALID_PARAM = SVC + ".InvalidParameter"
INVALID_REQUEST = IFACE + ".InvalidRequest"


def msg(obj):
    return json.dumps(obj).encode() + b"\0"


def call(method, params=None, **flags):
    m = {"method": method if "." in method else IFACE + "." + method}
    if params is not None:
        m["parameters"] = params
    m.update(flags)
    return msg(m)


PING = call("Ping")


def recv_or_closed(c):
    """Next message, or None when the daemon hung up (EOF or reset)."""
    try:
        return c.recv()
    except ConnectionResetError:
        return None


def recv_all(c, limit=None):
    """Messages until the daemon hangs up."""
    out = []
    while True:
        r = recv_or_closed(c)
        if r is None:
            return out
        out.append(r)
        if limit and len(out) > limit:
            raise AssertionError("more than %d messages: %r" % (limit, out[-3:]))


def starttime(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        f = f.read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


# ---- the table: (name, bytes sent, expected outcome) ----
# Outcomes: err(name, params) = that error, connection stays usable;
# proto(substring) = InvalidRequest whose reason contains substring, then the
# daemon hangs up; ok(params) = a normal reply.

def err(name, params=None):
    return ("err", name, params)


def bad(parameter):
    return err(INVALID_PARAM, {"parameter": parameter})


def proto(reason):
    return ("proto", reason)


def ok(params=None):
    return ("ok", params)


P = ('"method":"%s.Ping"' % IFACE).encode()
LONG_METHOD = IFACE + "." + "\u00e9" * 2000          # 4 KiB of two-byte characters

CASES = [
    # framing and JSON
    ("not_json", b"hello world\0", proto("invalid JSON")),
    ("json_array", b"[{" + P + b"}]\0", proto("must be a JSON object")),
    ("json_string", b'"' + IFACE.encode() + b'.Ping"\0', proto("must be a JSON object")),
    ("json_number", b"42\0", proto("must be a JSON object")),
    ("json_null", b"null\0", proto("must be a JSON object")),
    ("empty_message", b"\0", proto("invalid JSON")),
    ("deep_nesting_arrays", b"{" + P + b',"parameters":{"a":' + b"[" * 1000 + b"]" * 1000 + b"}}\0",
     proto("nesting too deep")),
    ("deep_nesting_objects", b"{" + P + b',"parameters":' + b'{"a":' * 1000 + b"1" + b"}" * 1001 + b"\0",
     proto("nesting too deep")),
    ("invalid_utf8_in_method", b'{"method":"' + IFACE.encode() + b'.Ping\xff"}\0', proto("invalid JSON")),
    ("invalid_utf8_in_value", b"{" + P + b',"parameters":{"x":"\xc3\x28"}}\0', proto("invalid JSON")),
    ("overlong_utf8", b"{" + P + b',"parameters":{"x":"\xc0\xaf"}}\0', proto("invalid JSON")),
    ("utf8_encoded_surrogate", b"{" + P + b',"parameters":{"x":"\xed\xa0\x80"}}\0', proto("invalid JSON")),
    ("utf8_beyond_unicode", b"{" + P + b',"parameters":{"x":"\xf4\x90\x80\x80"}}\0', proto("invalid JSON")),
    ("utf8_truncated_sequence", b"{" + P + b',"parameters":{"x":"\xe2\x82"}}\0', proto("invalid JSON")),
    # json-c turns a lone surrogate escape into U+FFFD: valid UTF-8 from here on
    ("lone_surrogate_escape", b"{" + P + b',"parameters":{"x\\ud800":1}}\0', bad("x\ufffd")),
    ("embedded_nul", b'{"method":"' + IFACE.encode() + b'.Pi\0ng"}\0', proto("invalid JSON")),
    ("trailing_garbage", b"{" + P + b"} xyz\0", proto("invalid JSON")),
    ("two_objects_in_one_message", b"{" + P + b"}{" + P + b"}\0", proto("invalid JSON")),
    ("trailing_comma", b"{" + P + b",}\0", proto("invalid JSON")),
    ("comment", b"{" + P + b",/* hi */\"parameters\":{}}\0", proto("invalid JSON")),
    ("leading_zero", b"{" + P + b',"parameters":{"x":01}}\0', proto("invalid JSON")),
    ("single_quotes", b"{'method':'" + IFACE.encode() + b".Ping'}\0", proto("invalid JSON")),
    # json-c's strict mode still takes single-quoted keys, NaN and Infinity:
    # harmless, as every parameter is type- and range-checked
    ("single_quoted_key", b"{'method':\"" + IFACE.encode() + b".Ping\"}\0", ok({})),
    ("nan_interval", b'{"method":"' + IFACE.encode() + b'.StartJob","parameters":{"pid":1,"interval_secs":NaN}}\0',
     bad("interval_secs")),
    ("infinite_interval", b'{"method":"' + IFACE.encode() + b'.StartJob","parameters":{"pid":1,"interval_secs":Infinity}}\0',
     bad("interval_secs")),
    ("unterminated_string", b'{"method":"' + IFACE.encode() + b'.Ping}\0', proto("invalid JSON")),
    # the call object
    ("missing_method", msg({"parameters": {}}), proto("method")),
    ("reply_instead_of_call", msg({"parameters": {}, "continues": True}), proto("method")),
    ("method_not_string", msg({"method": 5}), proto("method")),
    ("method_null", msg({"method": None}), proto("method")),
    ("method_without_interface", msg({"method": "Ping"}), proto("interface.Method")),
    ("empty_method", msg({"method": ""}), proto("interface.Method")),
    ("method_trailing_dot", msg({"method": IFACE + "."}), proto("interface.Method")),
    ("method_leading_dot", msg({"method": ".Ping"}), proto("interface.Method")),
    ("interface_name_too_long", call("x" * 300 + ".Ping"), proto("interface name too long")),
    ("method_escaped_nul", msg({"method": IFACE + ".Ping\u0000.Pong"}), proto("interface.Method")),
    ("parameters_array", call("Ping", []), proto("parameters")),
    ("parameters_string", call("Ping", "x"), proto("parameters")),
    ("more_not_bool", call("Ping", more="yes"), proto("boolean")),
    ("oneway_not_bool", call("Ping", oneway=1), proto("boolean")),
    ("upgrade_not_bool", call("Ping", upgrade="yes"), proto("boolean")),
    # names
    ("unknown_interface", call("no.such.Interface.Ping"), err(SVC + ".InterfaceNotFound",
                                                                {"interface": "no.such.Interface"})),
    ("unknown_method", call("Pong"), err(SVC + ".MethodNotFound", {"method": IFACE + ".Pong"})),
    ("method_wrong_case", call("ping"), err(SVC + ".MethodNotFound", {"method": IFACE + ".ping"})),
    ("unknown_service_method", call(SVC + ".Ping"), err(SVC + ".MethodNotFound", {"method": SVC + ".Ping"})),
    ("long_unknown_method", call(LONG_METHOD), err(SVC + ".MethodNotFound", {"method": LONG_METHOD})),
    ("unknown_interface_description", call(SVC + ".GetInterfaceDescription", {"interface": "no.such"}),
     err(SVC + ".InterfaceNotFound", {"interface": "no.such"})),
    # parameters in general
    ("parameters_null_means_none", msg({"method": IFACE + ".Ping", "parameters": None}), ok({})),
    ("whitespace_around_object", b"  \n{" + P + b"}\t \0", ok({})),
    ("unknown_parameter", call("Ping", {"x": 1}), bad("x")),
    ("unknown_parameter_getinfo", call(SVC + ".GetInfo", {"x": 1}), bad("x")),
    ("description_without_interface", call(SVC + ".GetInterfaceDescription", {}), bad("interface")),
    ("description_interface_escaped_nul", call(SVC + ".GetInterfaceDescription", {"interface": IFACE + "\u0000x"}),
     bad("interface")),
    ("description_interface_not_string", call(SVC + ".GetInterfaceDescription", {"interface": 5}),
     bad("interface")),
    # StartJob: pid
    ("pid_missing", call("StartJob", {}), bad("pid")),
    ("pid_string", call("StartJob", {"pid": "1"}), bad("pid")),
    ("pid_negative", call("StartJob", {"pid": -1}), bad("pid")),
    ("pid_zero", call("StartJob", {"pid": 0}), bad("pid")),
    ("pid_2_pow_31", call("StartJob", {"pid": 2**31}), bad("pid")),
    ("pid_2_pow_63", call("StartJob", {"pid": 2**63}), bad("pid")),
    ("pid_2_pow_64", call("StartJob", {"pid": 2**64}), bad("pid")),
    ("pid_huge", b'{"method":"' + IFACE.encode() + b'.StartJob","parameters":{"pid":' + b"9" * 40 + b"}}\0",
     bad("pid")),
    ("pid_min_int64", call("StartJob", {"pid": -2**63}), bad("pid")),
    ("pid_float", call("StartJob", {"pid": 1.5}), bad("pid")),
    ("pid_integral_float", call("StartJob", {"pid": 1.0}), bad("pid")),
    ("pid_exponent_overflow", b'{"method":"' + IFACE.encode() + b'.StartJob","parameters":{"pid":1e400}}\0',
     bad("pid")),
    ("pid_null", call("StartJob", {"pid": None}), bad("pid")),
    ("pid_bool", call("StartJob", {"pid": True}), bad("pid")),
    ("pid_array", call("StartJob", {"pid": [1]}), bad("pid")),
    ("pid_beyond_pid_max", call("StartJob", {"pid": 2**31 - 1}), err(IFACE + ".NoSuchProcess", {"pid": 2**31 - 1})),
    # StartJob: other parameters (validated before the process is looked at)
    ("startjob_unknown_parameter", call("StartJob", {"pid": 1, "pidd": 1}), bad("pidd")),
    ("name_not_string", call("StartJob", {"pid": 1, "name": 5}), bad("name")),
    ("start_time_string", call("StartJob", {"pid": 1, "start_time": "x"}), bad("start_time")),
    ("interval_string", call("StartJob", {"pid": 1, "interval_secs": "fast"}), bad("interval_secs")),
    ("interval_zero", call("StartJob", {"pid": 1, "interval_secs": 0}), bad("interval_secs")),
    ("interval_negative", call("StartJob", {"pid": 1, "interval_secs": -1}), bad("interval_secs")),
    ("interval_huge", call("StartJob", {"pid": 1, "interval_secs": 1e9}), bad("interval_secs")),
    ("upload_interval_zero", call("StartJob", {"pid": 1, "upload_interval_secs": 0}), bad("upload_interval_secs")),
    ("token_not_string", call("StartJob", {"pid": 1, "sentinel_token": 5}), bad("sentinel_token")),
    ("metadata_array", call("StartJob", {"pid": 1, "metadata": []}), bad("metadata")),
    ("metadata_string", call("StartJob", {"pid": 1, "metadata": "x"}), bad("metadata")),
    ("metadata_unknown_key", call("StartJob", {"pid": 1, "metadata": {"owner": "me"}}), bad("metadata")),
    ("metadata_wrong_type", call("StartJob", {"pid": 1, "metadata": {"project_name": 5}}), bad("project_name")),
    ("metadata_nested_object", call("StartJob", {"pid": 1, "metadata": {"team": {"a": 1}}}), bad("team")),
    ("metadata_tags_not_array", call("StartJob", {"pid": 1, "metadata": {"tags": "a=1"}}), bad("tags")),
    ("metadata_tags_numbers", call("StartJob", {"pid": 1, "metadata": {"tags": ["a=1", 2]}}), bad("tags")),
    ("metadata_command_null_item", call("StartJob", {"pid": 1, "metadata": {"command": [None]}}), bad("command")),
    ("metadata_huge_string", call("StartJob", {"pid": 1, "metadata": {"project_name": "x" * 4097}}),
     bad("project_name")),
    ("metadata_huge_string_900k", call("StartJob", {"pid": 1, "metadata": {"env": "y" * 900000}}), bad("env")),
    ("metadata_too_many_tags", call("StartJob", {"pid": 1, "metadata": {"tags": ["t"] * 1025}}), bad("tags")),
    # job names
    ("name_empty", call("StartJob", {"pid": 1, "name": ""}), bad("name")),
    # A name is any printable UTF-8 (a label, stored as given): these get as
    # far as the pid, and PID 1 is refused.
    ("name_space", call("StartJob", {"pid": 1, "name": "a b"}), bad("pid")),
    ("name_slash", call("StartJob", {"pid": 1, "name": "../../etc/passwd"}), bad("pid")),
    ("name_newline", call("StartJob", {"pid": 1, "name": "a\nb"}), bad("name")),
    ("name_all_digits", call("StartJob", {"pid": 1, "name": "123"}), bad("name")),
    ("name_too_long", call("StartJob", {"pid": 1, "name": "n" * 129}), bad("name")),
    ("name_non_ascii", call("StartJob", {"pid": 1, "name": "\u540d\u524d"}), bad("pid")),
    ("name_escaped_nul", call("StartJob", {"pid": 1, "name": "ok\u0000/../x"}), bad("name")),
    ("name_shell_chars", call("StartJob", {"pid": 1, "name": "$(reboot)"}), bad("pid")),
    # other methods
    ("finish_without_id", call("FinishJob", {}), bad("id")),
    ("finish_id_string", call("FinishJob", {"id": "1"}), bad("id")),
    ("finish_exit_code_256", call("FinishJob", {"id": 1, "exit_code": 256}), bad("exit_code")),
    ("finish_exit_code_negative", call("FinishJob", {"id": 1, "exit_code": -1}), bad("exit_code")),
    ("finish_signal_zero", call("FinishJob", {"id": 1, "signal": 0}), bad("signal")),
    ("finish_signal_65", call("FinishJob", {"id": 1, "signal": 65}), bad("signal")),
    ("stop_without_id", call("StopJob", {}), bad("id")),
    ("stop_name_number", call("StopJob", {"name": 5}), bad("name")),
    ("stop_unknown_job", call("StopJob", {"id": 999999}), err(IFACE + ".NoSuchJob", {"id": 999999, "name": None})),
    ("get_job_negative_id", call("GetJob", {"id": -1}), err(IFACE + ".NoSuchJob", {"id": -1, "name": None})),
    ("get_job_unknown_name", call("GetJob", {"name": "ghost"}), err(IFACE + ".NoSuchJob", {"id": None, "name": "ghost"})),
    ("list_running_only_string", call("ListJobs", {"running_only": "yes"}), bad("running_only")),
    ("samples_without_id", call("GetJobSamples", {}), bad("id")),
    ("samples_offset_negative", call("GetJobSamples", {"id": 1, "offset": -1}), bad("offset")),
    ("samples_limit_zero", call("GetJobSamples", {"id": 1, "limit": 0}), bad("limit")),
    ("samples_limit_huge", call("GetJobSamples", {"id": 1, "limit": 10001}), bad("limit")),
    ("samples_format_xml", call("GetJobSamples", {"id": 1, "format": "xml"}), bad("format")),
    ("samples_follow_string", call("GetJobSamples", {"id": 1, "follow": "yes"}), bad("follow")),
    # protocol flags in the wrong place
    ("more_on_ping", call("Ping", more=True), bad("more")),
    ("more_on_list_jobs", call("ListJobs", more=True), bad("more")),
    ("more_on_get_info", call(SVC + ".GetInfo", more=True), bad("more")),
    ("stream_without_more", call("StreamHostSamples"), err(SVC + ".ExpectedMore", {})),
    ("follow_without_more", call("GetJobSamples", {"id": 1, "follow": True}), err(SVC + ".ExpectedMore", {})),
    ("upgrade", call("Ping", upgrade=True), bad("upgrade")),
]


class Hostile(unittest.TestCase):
    """The battery: one daemon for all cases."""

    @classmethod
    def setUpClass(cls):
        # Room for MAX_CONN connections in the daemon and in this process.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        cls.d = Daemon(interval=0.2).start()

    @classmethod
    def tearDownClass(cls):
        try:
            cls.d.stop()
        finally:
            cls.d.cleanup()

    def tearDown(self):
        self.assert_serving()
        # No case may leave a job behind (a bad call that started one anyway).
        self.assertEqual(self.d.call("ListJobs", {"running_only": True})["jobs"], [])

    def assert_serving(self, within=5.0):
        """A Ping on a fresh connection answers: the daemon survived."""
        self.assertIsNone(self.d.proc.poll(), "daemon died:\n" + self.d.read_log()[-4000:])
        t0 = time.monotonic()
        with self.d.connect(timeout=within) as c:
            self.assertEqual(c.call("Ping"), {})
        return time.monotonic() - t0

    def spawn(self, *cmd):
        p = subprocess.Popen(list(cmd) or ["sleep", "30"])
        self.addCleanup(lambda: (p.kill(), p.wait()))
        return p

    def outcome(self, data, expected):
        with self.d.connect(timeout=15) as c:
            c.send_raw(data)
            r = recv_or_closed(c)
            kind = expected[0]
            if kind == "proto":
                self.assertIsNotNone(r, "no reply before the hang-up")
                self.assertEqual(r.get("error"), INVALID_REQUEST, r)
                self.assertIn(expected[1], r["parameters"]["reason"])
                self.assertIsNone(recv_or_closed(c), "the daemon must hang up after a protocol error")
                return
            self.assertIsNotNone(r, "the daemon hung up instead of replying")
            if kind == "err":
                self.assertEqual(r.get("error"), expected[1], r)
                if expected[2] is not None:
                    self.assertEqual(r.get("parameters"), expected[2])
            else:
                self.assertNotIn("error", r)
                if expected[1] is not None:
                    self.assertEqual(r.get("parameters"), expected[1])
            self.assertNotIn("continues", r)
            # The connection is still in sync and usable.
            c.send_raw(call(SVC + ".GetInfo"))
            self.assertEqual(recv_or_closed(c)["parameters"]["product"], "resource-trackerd")

    # ---- framing and sizes ----

    def test_no_nul_then_close(self):
        with self.d.connect() as c:
            c.send_raw(PING[:-1])
        # Nothing to assert on the closed socket; the daemon must not wait for it.

    def test_no_nul_then_half_close(self):
        with self.d.connect(timeout=10) as c:
            c.send_raw(PING[:-1])
            c.sock.shutdown(socket.SHUT_WR)
            self.assertIsNone(recv_or_closed(c), "an unterminated message gets no reply")

    def test_message_of_exactly_the_limit(self):
        head = b"{" + P + b',"parameters":{"pad":"'
        tail = b'"}}'
        data = head + b"x" * (MAX_MESSAGE - len(head) - len(tail)) + tail
        self.assertEqual(len(data), MAX_MESSAGE)
        self.outcome(data + b"\0", bad("pad"))

    def test_message_one_byte_over_the_limit(self):
        head = b"{" + P + b',"parameters":{"pad":"'
        tail = b'"}}'
        data = head + b"x" * (MAX_MESSAGE + 1 - len(head) - len(tail)) + tail
        self.outcome(data + b"\0", proto("longer than %d bytes" % MAX_MESSAGE))

    def test_64mib_message_is_cut_off_early(self):
        rss0 = rss_kib(self.d.proc.pid)
        chunk = b"x" * 65536
        sent = 0
        with self.d.connect(timeout=15) as c:
            c.send_raw(b"{" + P + b',"parameters":{"pad":"')
            try:
                while sent < 64 << 20:
                    sent += c.sock.send(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass
            r = recv_or_closed(c)
            self.assertEqual(r["error"], INVALID_REQUEST)
            self.assertIn("longer than %d bytes" % MAX_MESSAGE, r["parameters"]["reason"])
            self.assertIsNone(recv_or_closed(c))
        # Cut off after about the limit plus the socket buffers, not buffered.
        self.assertLess(sent, 4 << 20)
        self.assertLess(rss_kib(self.d.proc.pid) - rss0, 32 << 10)

    def test_nesting_below_the_limit_is_parsed(self):
        data = b"{" + P + b',"parameters":{"a":' + b"[" * 50 + b"]" * 50 + b"}}\0"
        self.outcome(data, bad("a"))

    # ---- pipelining, splitting, oneway, half-close ----

    def test_pipelined_calls_reply_in_order(self):
        with self.d.connect(timeout=15) as c:
            c.send_raw(PING + call("Info") + call("GetHostSample") + call("Pong") + call("ListJobs") +
                       call(SVC + ".GetInfo") + call("Ping", {"bogus": 1}) + PING)
            replies = [c.recv() for _ in range(8)]
        self.assertEqual(replies[0], {"parameters": {}})
        self.assertEqual(replies[1]["parameters"]["interval_secs"], 0.2)
        self.assertIn("cpu", replies[2]["parameters"]["sample"])
        self.assertEqual(replies[3]["error"], SVC + ".MethodNotFound")
        self.assertIn("jobs", replies[4]["parameters"])
        self.assertEqual(replies[5]["parameters"]["product"], "resource-trackerd")
        self.assertEqual(replies[6], {"error": INVALID_PARAM, "parameters": {"parameter": "bogus"}})
        self.assertEqual(replies[7], {"parameters": {}})

    def test_pipelined_start_job_then_list(self):
        p = self.spawn("sleep", "30")
        with self.d.connect(timeout=15) as c:
            c.send_raw(call("StartJob", {"pid": p.pid, "name": "pipelined"}) + call("ListJobs", {"running_only": True}))
            job = c.recv()["parameters"]["job"]
            jobs = c.recv()["parameters"]["jobs"]
            self.assertIn(job["id"], [j["id"] for j in jobs])
            c.call("StopJob", {"id": job["id"]})

    def test_call_split_byte_by_byte(self):
        data = call("Info")
        with self.d.connect(timeout=15) as c:
            for i in range(len(data)):
                c.send_raw(data[i:i + 1])
                time.sleep(0.002)
            self.assertEqual(c.recv()["parameters"]["interval_secs"], 0.2)

    def test_oneway_gets_no_reply(self):
        with self.d.connect(timeout=15) as c:
            c.send_raw(call("Info", oneway=True) + call("Pong", oneway=True) +
                       call("StartJob", {"pid": "x"}, oneway=True) + PING)
            # The first reply is the Ping's: the oneway calls answered nothing.
            self.assertEqual(c.recv(), {"parameters": {}})
            c.send_raw(call(SVC + ".GetInfo"))
            self.assertEqual(c.recv()["parameters"]["product"], "resource-trackerd")

    def test_oneway_start_job(self):
        p = self.spawn("sleep", "30")
        with self.d.connect(timeout=15) as c:
            c.send_raw(call("StartJob", {"pid": p.pid, "name": "oneway"}, oneway=True))
            jobs = c.call("ListJobs", {"running_only": True})["jobs"]
            mine = [j for j in jobs if j["name"] == "oneway"]
            self.assertEqual(len(mine), 1)
            self.assertEqual(mine[0]["pid"], p.pid)
            c.call("StopJob", {"name": "oneway"})

    def test_half_close_after_calls(self):
        with self.d.connect(timeout=15) as c:
            c.send_raw(PING + call("Info"))
            c.sock.shutdown(socket.SHUT_WR)
            replies = recv_all(c, limit=2)
        self.assertEqual(len(replies), 2)
        self.assertEqual(replies[0], {"parameters": {}})
        self.assertIn("hostname", replies[1]["parameters"])

    def test_half_close_after_async_call(self):
        # StartJob is answered by the sampler thread; the reply must still
        # reach a client that already shut down its sending side.
        p = self.spawn("sleep", "30")
        with self.d.connect(timeout=15) as c:
            c.send_raw(call("StartJob", {"pid": p.pid, "name": "halfclosed"}))
            c.sock.shutdown(socket.SHUT_WR)
            replies = recv_all(c, limit=1)
        self.assertEqual(len(replies), 1, "the StartJob reply was lost")
        self.assertEqual(replies[0]["parameters"]["job"]["name"], "halfclosed")
        self.d.call("StopJob", {"name": "halfclosed"})

    def test_half_close_keeps_stream(self):
        with self.d.connect(timeout=15) as c:
            c.send_raw(call("StreamHostSamples", more=True))
            c.sock.shutdown(socket.SHUT_WR)
            for _ in range(3):
                r = c.recv()
                self.assertTrue(r["continues"])
                self.assertIn("cpu", r["parameters"]["sample"])

    # ---- streams: vanishing clients, pipelined junk behind streams ----

    def test_disconnect_mid_host_stream(self):
        for _ in range(5):
            with self.d.connect(timeout=15) as c:
                c.send_raw(call("StreamHostSamples", more=True))
                self.assertTrue(c.recv()["continues"])
            self.assert_serving()

    def test_disconnect_mid_job_stream(self):
        p = self.spawn("sleep", "30")
        job = self.d.call("StartJob", {"pid": p.pid})["job"]
        wait_for(lambda: self.d.call("GetJob", {"id": job["id"]})["job"]["summary"]["samples"] >= 2)
        for fmt in ("json", "csv"):
            with self.d.connect(timeout=15) as c:
                c.send_raw(call("GetJobSamples", {"id": job["id"], "follow": True, "format": fmt}, more=True))
                self.assertTrue(c.recv()["continues"])
            self.assert_serving()
        # Live samples and the end of the job reach no dead connection.
        time.sleep(0.5)
        self.assertEqual(self.d.call("StopJob", {"id": job["id"]})["job"]["state"], "stopped")

    def test_disconnect_while_start_job_in_flight(self):
        p = self.spawn("sleep", "30")
        with self.d.connect() as c:
            c.send_raw(call("StartJob", {"pid": p.pid, "name": "orphaned"}))
        # The job exists even though nobody got the reply.
        job = wait_for(lambda: [j for j in self.d.call("ListJobs")["jobs"] if j["name"] == "orphaned"],
                       what="the orphaned job")[0]
        self.assertEqual(job["pid"], p.pid)
        self.d.call("StopJob", {"id": job["id"]})

    def ended_job(self):
        p = self.spawn("sleep", "0.5")
        job = self.d.call("StartJob", {"pid": p.pid})["job"]
        wait_for(lambda: self.d.call("GetJob", {"id": job["id"]})["job"]["state"] != "running",
                 what="the job to end")
        return job

    def test_junk_pipelined_behind_a_finished_stream(self):
        # The stream ends inside the call; the junk behind it is then read
        # while the call is still being dispatched.
        job = self.ended_job()
        with self.d.connect(timeout=15) as c:
            c.send_raw(call("GetJobSamples", {"id": job["id"]}, more=True) + b"junk\0")
            replies = recv_all(c, limit=10)
        self.assertGreaterEqual(len(replies), 2)
        self.assertTrue(replies[-2]["parameters"]["ended"])
        self.assertNotIn("continues", replies[-2])
        self.assertEqual(replies[-1]["error"], INVALID_REQUEST)

    def test_calls_pipelined_behind_finished_streams(self):
        job = self.ended_job()
        n = 300
        with self.d.connect(timeout=30) as c:
            c.send_raw(call("GetJobSamples", {"id": job["id"], "format": "csv"}, more=True) * n + PING)
            for _ in range(n):
                r = c.recv()
                self.assertTrue(r["parameters"]["ended"])
                self.assertNotIn("continues", r)
            self.assertEqual(c.recv(), {"parameters": {}})

    def test_junk_pipelined_behind_a_live_stream(self):
        # The stream ends on a sampler event (the job ends); the junk is read then.
        p = self.spawn("sleep", "1")
        job = self.d.call("StartJob", {"pid": p.pid})["job"]
        with self.d.connect(timeout=15) as c:
            c.send_raw(call("GetJobSamples", {"id": job["id"], "follow": True}, more=True) + b"junk\0")
            replies = recv_all(c, limit=100)
        self.assertTrue(replies[-2]["parameters"]["ended"])
        self.assertEqual(replies[-1]["error"], INVALID_REQUEST)

    def test_half_close_behind_a_live_stream(self):
        p = self.spawn("sleep", "1")
        job = self.d.call("StartJob", {"pid": p.pid})["job"]
        with self.d.connect(timeout=15) as c:
            c.send_raw(call("GetJobSamples", {"id": job["id"], "follow": True}, more=True) + PING)
            c.sock.shutdown(socket.SHUT_WR)
            replies = recv_all(c, limit=100)
        self.assertTrue(replies[-2]["parameters"]["ended"])
        self.assertEqual(replies[-1], {"parameters": {}})

    # ---- clients that do not read ----

    def ping_latencies(self, stop, out):
        while not stop.is_set():
            out.append(self.assert_serving(within=10))
            time.sleep(0.05)

    def test_stream_never_read_does_not_block_others(self):
        with self.d.connect(timeout=15) as slow:
            slow.send_raw(call("StreamHostSamples", more=True))
            lat = []
            t_end = time.monotonic() + 3
            while time.monotonic() < t_end:
                lat.append(self.assert_serving())
                time.sleep(0.1)
            self.assertLess(max(lat), 1.0, "a Ping took %.3f s while a client did not read" % max(lat))
            # The slow one is still served once it reads.
            self.assertTrue(slow.recv()["continues"])

    def test_client_that_never_reads_is_held_back(self):
        # Pipelined calls whose replies are never read: once OUTPUT_HIGH of
        # replies wait, the daemon stops serving and reading that client, so
        # its sending stalls and the daemon holds little for it, without
        # delaying anyone else. Once it reads, every call it sent is answered.
        one = call("GetHostSample")
        flood = one * 1000
        rss0 = rss_kib(self.d.proc.pid)
        stop, lat = threading.Event(), []
        pinger = threading.Thread(target=self.ping_latencies, args=(stop, lat))
        pinger.start()
        with self.d.connect(timeout=30) as c:
            c.sock.setblocking(False)
            sent, last_progress = 0, time.monotonic()
            try:
                while time.monotonic() - last_progress < 1.5 and sent < 64 << 20:
                    try:
                        sent += c.sock.send(flood[sent % len(one):])
                        last_progress = time.monotonic()
                    except BlockingIOError:
                        time.sleep(0.02)
                grown = rss_kib(self.d.proc.pid) - rss0
            finally:
                stop.set()
                pinger.join()
            self.assertLess(sent, 4 << 20, "the daemon kept reading calls whose replies were not read")
            self.assertLess(grown, 8 << 10, "RSS grew by %d KiB" % grown)
            self.assertLess(max(lat), 1.0, "a Ping took %.3f s while a client did not read" % max(lat))
            c.sock.setblocking(True)
            for _ in range(sent // len(one)):
                self.assertIn("cpu", c.recv()["parameters"]["sample"])
            c.sock.settimeout(0.5)
            self.assertRaises(socket.timeout, c.recv)
        self.assertNotIn("does not read its replies", self.d.read_log())

    # ---- odd processes ----

    def test_kernel_thread(self):
        # kthreadd: root-owned, no memory of its own, kernel-thread children.
        # Not visible inside a PID namespace (a container).
        try:
            with open("/proc/2/comm") as f:
                if f.read().strip() != "kthreadd":
                    self.skipTest("no kthreadd in this PID namespace")
        except OSError:
            self.skipTest("no PID 2 in this PID namespace")
        job = self.d.call("StartJob", {"pid": 2})["job"]
        self.assertEqual(job["state"], "running")
        wait_for(lambda: self.d.call("GetJob", {"id": job["id"]})["job"]["summary"]["samples"] >= 2)
        j = self.d.call("StopJob", {"id": job["id"]})["job"]
        self.assertEqual(j["state"], "stopped")
        self.assertEqual(j["summary"]["peak_rss_bytes"], 0)
        self.assertGreater(j["summary"]["peak_children"], 0)

    def test_pid_1(self):
        # Not even root tracks init: its tree is the whole host, which the
        # host's own figures are.
        self.outcome(call("StartJob", {"pid": 1, "name": "init"}), bad("pid"))
        self.assertEqual(self.d.call("ListJobs", {"running_only": True})["jobs"], [])

    def test_zombie(self):
        p = self.spawn("true")
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)   # exited, not reaped
        self.outcome(call("StartJob", {"pid": p.pid}), err(IFACE + ".NoSuchProcess", {"pid": p.pid}))

    def test_thread_id(self):
        # A thread is not a process: its TID must not start a job.
        t = threading.Thread(target=time.sleep, args=(2,))
        t.start()
        tid = t.native_id
        try:
            self.outcome(call("StartJob", {"pid": tid}), err(IFACE + ".NoSuchProcess", {"pid": tid}))
        finally:
            t.join()

    def test_start_time_mismatch(self):
        p = self.spawn("sleep", "30")
        self.outcome(call("StartJob", {"pid": p.pid, "start_time": starttime(p.pid) - 1}),
                     err(IFACE + ".NoSuchProcess", {"pid": p.pid}))

    def test_metadata_at_the_limits_is_accepted(self):
        p = self.spawn("sleep", "30")
        md = {"project_name": "x" * 4096, "tags": ["t=%d" % i for i in range(1024)], "env": None}
        job = self.d.call("StartJob", {"pid": p.pid, "name": "n" * 128, "metadata": md})["job"]
        self.assertEqual(job["metadata"]["project_name"], "x" * 4096)
        self.assertEqual(len(job["metadata"]["tags"]), 1024)
        self.d.call("StopJob", {"id": job["id"]})

    # ---- connection limits ----

    def test_connections_per_uid_limit(self):
        # As an unprivileged user (root is exempt): MAX_CONN_PER_UID open
        # connections work, the next is refused with LimitExceeded.
        script = r"""
import json, socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
ping = json.dumps({"method": "%s.Ping"}).encode() + b"\0"
def connect():
    s = socket.socket(socket.AF_UNIX); s.settimeout(15); s.connect(path); return s
def recv(s):
    buf = b""
    while not buf.endswith(b"\0"):
        d = s.recv(65536)
        if not d: return None
        buf += d
    return json.loads(buf[:-1])
socks = [connect() for _ in range(n)]
for s in socks:
    s.sendall(ping)
assert all(recv(s) == {"parameters": {}} for s in socks)
extra = connect()
refused = recv(extra)
after = recv(extra)
socks.pop().close()
for _ in range(100):    # the daemon notices the close asynchronously
    s = connect()
    s.sendall(ping)
    r = recv(s)
    if r == {"parameters": {}}: break
    s.close()
    time.sleep(0.05)
print(json.dumps({"refused": refused, "after": after, "retry": r}))
""" % IFACE
        p = subprocess.run(["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups",
                            "/usr/bin/python3", "-c", script, self.d.socket, str(MAX_CONN_PER_UID)],
                           capture_output=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        r = json.loads(p.stdout)
        self.assertEqual(r["refused"], {"error": IFACE + ".LimitExceeded",
                                        "parameters": {"limit": "connections_per_user", "max": MAX_CONN_PER_UID}})
        self.assertIsNone(r["after"], "a refused connection is closed")
        self.assertEqual(r["retry"], {"parameters": {}})

    def test_jobs_per_uid_limit(self):
        # As an unprivileged user: MAX_JOBS_PER_UID running jobs, then
        # LimitExceeded; PID 1 is refused (its tree is the host's).
        script = r"""
import json, socket, subprocess, sys
path, n = sys.argv[1], int(sys.argv[2])
def call(method, params):
    s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect(path)
    s.sendall(json.dumps({"method": "%s." + method, "parameters": params}).encode() + b"\0")
    buf = b""
    while not buf.endswith(b"\0"):
        buf += s.recv(65536)
    s.close()
    return json.loads(buf[:-1])
kids = [subprocess.Popen(["sleep", "60"]) for _ in range(n + 1)]
started = [call("StartJob", {"pid": k.pid}) for k in kids[:n]]
over = call("StartJob", {"pid": kids[n].pid})
init = call("StartJob", {"pid": 1})
for k in kids:
    k.kill(); k.wait()
print(json.dumps({"ok": sum("job" in r.get("parameters", {}) for r in started), "over": over, "init": init}))
""" % IFACE
        p = subprocess.run(["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups",
                            "/usr/bin/python3", "-c", script, self.d.socket, str(MAX_JOBS_PER_UID)],
                           capture_output=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        r = json.loads(p.stdout)
        self.assertEqual(r["ok"], MAX_JOBS_PER_UID)
        self.assertEqual(r["over"], {"error": IFACE + ".LimitExceeded",
                                     "parameters": {"limit": "jobs_per_user", "max": MAX_JOBS_PER_UID}})
        self.assertEqual(r["init"], {"error": "org.varlink.service.InvalidParameter",
                                     "parameters": {"parameter": "pid"}})
        # Their processes are gone: the jobs end by themselves.
        wait_for(lambda: self.d.call("ListJobs", {"running_only": True})["jobs"] == [], timeout=30,
                 what="the jobs of the killed processes to end")

    def test_offset_past_the_end(self):
        job = self.ended_job()
        self.outcome(call("GetJobSamples", {"id": job["id"], "offset": 10**6}),
                     ok({"samples": [], "csv": None, "next_offset": 10**6, "ended": True}))

    def test_oneway_with_more_is_a_stream(self):
        with self.d.connect(timeout=15) as c:
            c.send_raw(call("StreamHostSamples", more=True, oneway=True))
            for _ in range(2):
                r = c.recv()
                self.assertTrue(r["continues"])
                self.assertIn("cpu", r["parameters"]["sample"])

    def test_total_connection_limit(self):
        socks = []
        try:
            while len(socks) < MAX_CONN:
                c = self.d.connect(timeout=15)
                c.send_raw(PING)
                r = c.recv()
                if r != {"parameters": {}}:
                    # Refused: the daemon has not yet seen an earlier close.
                    self.assertEqual(r["error"], IFACE + ".LimitExceeded")
                    self.assertGreater(len(socks), MAX_CONN - 10)
                    c.close()
                    time.sleep(0.05)
                    continue
                socks.append(c)
            with self.d.connect(timeout=15) as extra:
                self.assertEqual(extra.recv(), {"error": IFACE + ".LimitExceeded",
                                                "parameters": {"limit": "connections", "max": MAX_CONN}})
                self.assertIsNone(recv_or_closed(extra))
        finally:
            for c in socks:
                c.close()
        wait_for(self.serving_again, what="service after the flood")

    def serving_again(self):
        # The daemon notices the closes asynchronously: a refusal until then.
        try:
            return self.assert_serving() is not None
        except VarlinkError as e:
            self.assertEqual(e.error, IFACE + ".LimitExceeded")
            return False


def make_case(data, expected):
    def test(self):
        self.outcome(data, expected)
    return test


for _name, _data, _expected in CASES:
    assert not hasattr(Hostile, "test_" + _name), _name
    setattr(Hostile, "test_" + _name, make_case(_data, _expected))


class StreamChurn(unittest.TestCase):
    """Streaming clients that all hang up at once, many times, on a fast
    tick while the main loop is busy: a connection closed by a failed write
    of a sample must not be touched again by a later event of the same
    epoll batch (its hang-up)."""

    def test_streams_hanging_up_together(self):
        d = Daemon(interval=0.1).start()     # the shortest interval the daemon takes
        try:
            stream, flood = call("StreamHostSamples", more=True), call("GetHostSample") * 200
            for _ in range(40):
                streams = []
                for _ in range(60):
                    c = d.connect(timeout=15)
                    c.send_raw(stream)
                    streams.append(c)
                busy = []
                for _ in range(10):
                    c = d.connect(timeout=15)
                    c.send_raw(flood)
                    busy.append(c)
                time.sleep(0.05)
                for c in streams + busy:
                    c.close()
                self.assertIsNone(d.proc.poll(), "daemon died:\n" + d.read_log()[-6000:])
                time.sleep(0.02)
            with d.connect() as c:
                self.assertEqual(c.call("Ping"), {})
        finally:
            try:
                d.stop()
            finally:
                d.cleanup()


class LargePages(unittest.TestCase):
    """A job whose samples are large: the biggest page a client may ask for
    (limit 10000) must not exceed what the daemon lets a client fall behind
    by, or a client that reads normally is dropped."""

    def test_largest_page_of_large_samples(self):
        d = Daemon(interval=0.2).start()
        try:
            p = subprocess.Popen(["sleep", "0.5"])
            job = d.call("StartJob", {"pid": p.pid})["job"]
            p.wait()
            wait_for(lambda: d.call("GetJob", {"id": job["id"]})["job"]["state"] != "running")
        finally:
            d.stop()
        # 4000 samples of 6.5 KiB or more (a big host: many cores, disks, GPUs),
        # as a samples file of an older daemon that the store takes over.
        line = subprocess.run([os.path.join(TOOLS, "rt_store_dump"), d.state_dir, "--job", str(job["id"])],
                              check=True, capture_output=True).stdout.split(b"\n")[0] + b"\n"
        path = os.path.join(d.state_dir, "jobs", str(job["id"]), "samples.jsonl")
        fat = line[:1] + b'"pad":"' + b"p" * 6000 + b'",' + line[1:]
        n = 4000
        with open(path, "wb") as f:
            f.write(fat * n)
        d2 = Daemon(interval=0.2, state_dir=d.state_dir).start()
        try:
            got, offset = 0, 0
            with d2.connect(timeout=60) as c:
                while offset < n:
                    r = c.call("GetJobSamples", {"id": job["id"], "offset": offset, "limit": 10000})
                    self.assertGreater(len(r["samples"]), 0)
                    self.assertEqual(r["next_offset"], offset + len(r["samples"]))
                    self.assertEqual(r["samples"][0]["pad"], "p" * 6000)
                    got += len(r["samples"])
                    offset = r["next_offset"]
                self.assertTrue(r["ended"])
                # Streamed with "more": every page arrives too.
                pages = list(c.stream("GetJobSamples", {"id": job["id"]}))
                self.assertEqual(sum(len(pg["samples"]) for pg in pages), n)
                self.assertEqual(pages[-1]["next_offset"], n)
            self.assertEqual(got, n)
            self.assertNotIn("does not read its replies", d2.read_log())
        finally:
            try:
                d2.stop()
            finally:
                d2.cleanup()
                d.cleanup()


class DescriptorExhaustion(unittest.TestCase):
    """More clients than the daemon has file descriptors: it must neither
    spin on accept() nor flood its log, and it serves the waiting clients
    once descriptors are free again."""

    def test_accept_without_descriptors(self):
        # The daemon raises its soft limit to fit limits.max_connections at
        # start: lower the hard limit under it afterwards.
        d = Daemon(interval=0.2).start()
        hard = resource.prlimit(d.proc.pid, resource.RLIMIT_NOFILE)[1]
        want = 1024 + 256 if hard == resource.RLIM_INFINITY else min(hard, 1024 + 256)
        self.assertGreaterEqual(resource.prlimit(d.proc.pid, resource.RLIMIT_NOFILE)[0], want)
        # Room for 40 connections above what the daemon holds itself.
        room = len(os.listdir("/proc/%d/fd" % d.proc.pid)) + 40
        resource.prlimit(d.proc.pid, resource.RLIMIT_NOFILE, (room, room))
        held = []
        try:
            held += [d.connect(timeout=15) for _ in range(80)]
            # Accepted ones answer; the rest wait in the listen backlog.
            self.assertEqual(held[0].call("Ping"), {})
            time.sleep(0.5)
            t0 = cpu_ticks(d.proc.pid)
            time.sleep(2)
            used = (cpu_ticks(d.proc.pid) - t0) / os.sysconf("SC_CLK_TCK")
            self.assertLess(used, 1.0, "the daemon spun for %.2f s of CPU in 2 s" % used)
            log = d.read_log()
            self.assertLess(log.count("accept"), 5, log[-2000:])
            # Free descriptors: the waiting clients are served.
            for c in held[:40]:
                c.close()
            for c in held[40:]:
                c.send_raw(PING)
                self.assertEqual(c.recv(), {"parameters": {}})
            with held[-1] as c:
                self.assertEqual(c.call("Ping"), {})
        finally:
            for c in held:
                c.close()
            try:
                d.stop()
            finally:
                d.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
