"""Receivers of the daemon's end-of-job notifications for integration tests:
a webhook receiver on loopback (WebhookReceiver: every POST's path, headers
and JSON body; answers from a script, 200 once it runs out) and a sendmail
stand-in (Sendmail: a script the daemon's notify.sendmail names that keeps
each mail it is given, with its arguments and environment)."""

import http.server
import json
import os
import shutil
import tempfile
import threading

from rtlib import wait_for


class WebhookReceiver:
    def __init__(self, statuses=()):
        self.statuses = list(statuses)
        self.requests = []
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with outer.lock:
                    status = outer.statuses.pop(0) if outer.statuses else 200
                    outer.requests.append({"path": self.path, "headers": dict(self.headers),
                                           "body": body.decode(errors="replace"), "status": status})
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path="/hook"):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def wait(self, n=1, timeout=30):
        """The first n requests, once they came."""
        wait_for(lambda: len(self.requests) >= n, timeout=timeout, what="%d webhook POST(s)" % n)
        with self.lock:
            return list(self.requests[:n])

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Sendmail:
    SCRIPT = """#!/bin/sh
d=%s
n=$(ls "$d" | grep -c '^mail')
echo "$@" > "$d/args$n"
cat > "$d/mail$n"
"""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="rt-sendmail-")
        os.chmod(self.dir, 0o755)
        self.path = os.path.join(self.dir, "sendmail")
        self.out = os.path.join(self.dir, "out")
        os.mkdir(self.out)
        with open(self.path, "w") as f:
            f.write(self.SCRIPT % self.out)
        os.chmod(self.path, 0o755)

    def mails(self):
        names = sorted((n for n in os.listdir(self.out) if n.startswith("mail")), key=lambda n: int(n[4:]))
        out = []
        for n in names:
            with open(os.path.join(self.out, n)) as f:
                out.append(f.read())
        return out

    def wait(self, n=1, timeout=30):
        wait_for(lambda: len(self.mails()) >= n, timeout=timeout, what="%d mail(s)" % n)
        return self.mails()

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def body_json(request):
    return json.loads(request["body"])
