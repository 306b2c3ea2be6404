"""Test doubles for the upload tests (stdlib only).

SentinelStandin: the Sentinel API (POST /runs, /runs/{id}/refresh-credentials,
/runs/{id}/finish). Hands out S3 credentials, records every request, can be
told to fail (`fail = "close" | 503 | ("slow", secs)`), and answers 422 to the
mistakes the live API rejects (pid or unknown keys in /runs, command not a
JSON string, extra keys in /finish, gzip bodies), recording them in
`violations`.

S3Proxy: a byte-transparent HTTP/1.1 proxy in front of radosgw (so SigV4
still verifies) that records each request head and can play S3 down
(`fail = "close" | 503 | ("slow", secs)`).
"""
import http.server
import json
import re
import socket
import socketserver
import threading
import time

META = ["job_name", "project_name", "stage_name", "task_name", "team", "env", "language",
        "orchestrator", "executor", "external_run_id", "container_image"]
HOST = ["host_id", "host_hostname", "host_ip", "host_server_allocation", "host_vcpus", "host_cpu_model",
        "host_memory_mib", "host_gpu_model", "host_gpu_count", "host_gpu_memory_mib", "host_storage_gb"]
CLOUD = ["cloud_vendor_id", "cloud_account_id", "cloud_region_id", "cloud_zone_id", "cloud_instance_type"]
FINISH_S3 = {"exit_code", "run_status", "finished_at", "data_source", "data_uris"}
FINISH_INLINE = {"exit_code", "run_status", "finished_at", "data_source", "data_csv"}
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # injected "close" failures break the handler's writes on purpose


class SentinelStandin:
    def __init__(self, token, bucket, keys, prefix="tenant=acme/runs"):
        self.token = token
        self.upload_uri_prefix = f"s3://{bucket}/{prefix}" if bucket else None
        self.keys = keys                  # [(access, secret)] handed out by /runs
        self.refresh_keys = keys          # handed out by refresh-credentials
        self.expires_in = 3600            # seconds of validity of each credential set
        self.fail = None
        self.finish_status = 200          # status of an accepted /finish
        self.runs_reply = None            # a 201 body for /runs instead of a new run
        self.refuse = set()               # /runs fields answered with a FastAPI 422 (a schema we do not know)
        self.refuse_objects = set()       # key endings: a /finish listing one is refused, FastAPI 422 naming it
        self.requests = []                # (method, path, headers, body)
        self.violations = []
        self.runs = {}                    # run_id -> {"start": body, "finish": [bodies], "refreshes": n, "creds": [...]}
        self.lock = threading.Lock()
        self._n = 0
        standin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                standin._handle(self)

            def do_GET(self):
                standin._handle(self)

            do_PUT = do_GET

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    # -- helpers for tests --
    def count(self, path_re):
        with self.lock:
            return sum(1 for r in self.requests if re.search(path_re, r[1]))

    def finishes(self):
        with self.lock:
            return {rid: r["finish"] for rid, r in self.runs.items() if r["finish"]}

    def violate(self, what):
        with self.lock:
            self.violations.append(what)

    def creds(self, key):
        ak, sk = key
        self._n += 1
        return {"access_key": ak, "secret_key": sk, "session_token": f"sts-token-{self._n}",
                "expiration": iso(time.time() + self.expires_in)}

    # -- the API --
    def _reply(self, h, status, obj=None):
        body = json.dumps(obj if obj is not None else {}).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def _handle(self, h):
        n = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(n) if n else b""
        with self.lock:
            self.requests.append((h.command, h.path, dict(h.headers), body))
            fail = self.fail
        if fail == "close":
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return
        if isinstance(fail, int):
            return self._reply(h, fail, {"detail": "injected failure"})
        if isinstance(fail, tuple) and fail[0] == "slow":
            time.sleep(fail[1])
        if h.command != "POST":
            return self._reply(h, 405)
        if h.headers.get("Authorization") != f"Bearer {self.token}":
            self.violate(f"bad Authorization on {h.path}")
            return self._reply(h, 401, {"detail": "bad token"})
        if h.headers.get("Content-Encoding"):
            self.violate(f"Content-Encoding on {h.path}")
            return self._reply(h, 422, {"detail": "gzip bodies are not accepted"})
        m = re.fullmatch(r"/runs/([^/]+)/(finish|refresh-credentials)", h.path)
        if h.path == "/runs":
            return self._start(h, body)
        if not m:
            return self._reply(h, 404)
        import urllib.parse
        run_id = urllib.parse.unquote(m.group(1))
        with self.lock:
            run = self.runs.get(run_id)
        if run is None:
            self.violate(f"unknown run {run_id!r}")
            return self._reply(h, 404)
        if m.group(2) == "refresh-credentials":
            if body:
                self.violate("refresh-credentials with a body")
            c = self.creds(self.refresh_keys[0])
            with self.lock:
                run["refreshes"] += 1
                run["creds"].append(c)
            return self._reply(h, 200, {"upload_credentials": c})
        return self._finish(h, run_id, run, body)

    def _json(self, h, body):
        if not (h.headers.get("Content-Type") or "").startswith("application/json"):
            self.violate(f"Content-Type {h.headers.get('Content-Type')!r} on {h.path}")
        try:
            obj = json.loads(body)
        except ValueError:
            self.violate(f"body of {h.path} is not JSON")
            return None
        if not isinstance(obj, dict):
            self.violate(f"body of {h.path} is not an object")
            return None
        return obj

    def _start(self, h, body):
        obj = self._json(h, body)
        if obj is None:
            return self._reply(h, 422)
        bad = []
        if "pid" in obj:
            bad.append("pid in /runs")
        unknown = set(obj) - set(META + HOST + CLOUD + ["tags", "command"])
        if unknown:
            bad.append(f"unknown keys in /runs: {sorted(unknown)}")
        missing = [k for k in HOST + CLOUD if k not in obj]
        if missing:
            bad.append(f"host/cloud keys missing: {missing}")
        if "command" in obj:
            cmd = obj["command"]
            try:
                ok = isinstance(cmd, str) and isinstance(json.loads(cmd), list)
            except ValueError:
                ok = False
            if not ok:
                bad.append("command is not a JSON string holding an array")
        # tags as the Python client documents and tests them: an object key -> value.
        if "tags" in obj and not (isinstance(obj["tags"], dict) and
                                  all(isinstance(v, str) for v in obj["tags"].values())):
            bad.append("tags is not an object of strings")
        for k in META:
            if k in obj and not isinstance(obj[k], str):
                bad.append(f"{k} is not a string")
        if bad:
            for b in bad:
                self.violate(b)
            return self._reply(h, 422, {"detail": bad})
        refused = sorted(self.refuse & set(obj))
        if refused:  # not a client mistake: an API that changed under it
            return self._reply(h, 422, {"detail": [{"type": "value_error", "loc": ["body", k],
                                                    "msg": "not accepted", "input": obj[k]} for k in refused]})
        if self.runs_reply is not None:
            return self._reply(h, 201, self.runs_reply)
        with self.lock:
            run_id = f"run:{len(self.runs) + 1:04d}"
            c = self.creds(self.keys[0])
            self.runs[run_id] = {"start": obj, "finish": [], "refreshes": 0, "creds": [c]}
        reply = {"run_id": run_id, "upload_credentials": c}
        if self.upload_uri_prefix:
            reply["upload_uri_prefix"] = self.upload_uri_prefix
        return self._reply(h, 201, reply)

    def _finish(self, h, run_id, run, body):
        obj = self._json(h, body)
        if obj is None:
            return self._reply(h, 422)
        bad = []
        keys = set(obj)
        if keys not in (FINISH_S3, FINISH_INLINE):
            bad.append(f"/finish keys {sorted(keys)}")
        else:
            if obj["data_source"] != ("s3" if keys == FINISH_S3 else "inline"):
                bad.append("data_source does not match the data")
            if not isinstance(obj["exit_code"], int):
                bad.append("exit_code not an integer")
            elif obj["run_status"] != ("finished" if obj["exit_code"] == 0 else "failed"):
                bad.append(f"run_status {obj['run_status']!r} for exit code {obj['exit_code']}")
            if not ISO.match(str(obj["finished_at"])):
                bad.append(f"finished_at {obj['finished_at']!r}")
            if keys == FINISH_S3 and not (isinstance(obj["data_uris"], list) and
                                          all(isinstance(u, str) and u.startswith("s3://")
                                              for u in obj["data_uris"])):
                bad.append("data_uris")
            if keys == FINISH_INLINE and not isinstance(obj["data_csv"], str):
                bad.append("data_csv is not a string")
        if bad:
            for b in bad:
                self.violate(b)
            return self._reply(h, 422, {"detail": bad})
        named = [{"type": "value_error", "loc": ["body", "data_uris", i], "msg": f"{u} is not a CSV of this run",
                  "input": u} for i, u in enumerate(obj.get("data_uris") or [])
                 if any(u.endswith(e) for e in self.refuse_objects)]
        if named:
            with self.lock:
                run.setdefault("refused", []).append(obj)
            return self._reply(h, 422, {"detail": named})
        with self.lock:
            run["finish"].append(obj)
        return self._reply(h, self.finish_status, {"run": {"run_id": run_id}, "processing": {"status": "queued"}})


class S3Proxy:
    def __init__(self, upstream):
        self.upstream = upstream          # (host, port)
        self.fail = None
        self.requests = []                # {"method", "path", "headers"}
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.closed = True
        self.sock.close()

    def puts(self):
        with self.lock:
            return [r for r in self.requests if r["method"] == "PUT"]

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    @staticmethod
    def _read_head(c, buf):
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d:
                return None, buf
            buf += d
        i = buf.index(b"\r\n\r\n") + 4
        return buf[:i], buf[i:]

    def _serve(self, c):
        up = None
        buf = b""
        try:
            while True:
                head, buf = self._read_head(c, buf)
                if head is None:
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                with self.lock:
                    fail = self.fail
                    self.requests.append({"method": method, "path": path, "headers": headers,
                                          "failed": fail is not None and not isinstance(fail, tuple)})
                if fail == "close":
                    return
                if isinstance(fail, int):
                    msg = b"<Error><Code>ServiceUnavailable</Code></Error>"
                    c.sendall(b"HTTP/1.1 %d Injected\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                              % (fail, len(msg), msg))
                    return
                if isinstance(fail, tuple) and fail[0] == "slow":
                    time.sleep(fail[1])
                if up is None:
                    up = socket.create_connection(self.upstream)
                    threading.Thread(target=self._pump, args=(up, c), daemon=True).start()
                up.sendall(head)
                left = int(headers.get("content-length", "0"))
                while left:
                    if not buf:
                        buf = c.recv(65536)
                        if not buf:
                            return
                    chunk, buf = buf[:left], buf[left:]
                    up.sendall(chunk)
                    left -= len(chunk)
        except OSError:
            pass
        finally:
            for s in (c, up):
                if s is not None:
                    try:
                        s.close()
                    except OSError:
                        pass

    @staticmethod
    def _pump(src, dst):
        try:
            while True:
                d = src.recv(65536)
                if not d:
                    break
                dst.sendall(d)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
