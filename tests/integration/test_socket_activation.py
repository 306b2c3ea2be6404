"""Socket activation through systemd's own launcher: systemd-socket-activate
binds the socket, starts the probe on the first connection and passes the
socket as fd 3 with LISTEN_FDS/LISTEN_PID, exactly as PID 1 does."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ACTIVATE = shutil.which("systemd-socket-activate") or "/usr/bin/systemd-socket-activate"
PROBE = os.path.join(os.environ["RT_TOOLS_DIR"], "rt_activation_probe")


def wait_for(path, proc, deadline=30.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if os.path.exists(path):
            return
        if proc.poll() is not None:
            raise SystemExit(f"launcher exited early: {proc.returncode}")
        time.sleep(0.05)
    raise SystemExit(f"{path} never appeared")


def activate(listen, expected):
    """Connect once through the launcher; returns (reply, probe exit code)."""
    proc = subprocess.Popen([ACTIVATE, "-l", listen, PROBE, expected],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(listen, proc)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(60)
        s.connect(listen)
        reply = b""
        try:
            while True:
                chunk = s.recv(256)
                if not chunk:
                    break
                reply += chunk
        except ConnectionResetError:  # closed without accepting
            pass
        s.close()
        rc = proc.wait(timeout=60)
        return reply.decode(), rc, proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main():
    if not os.path.exists(ACTIVATE):
        print("SKIP: systemd-socket-activate not installed")
        return 0
    with tempfile.TemporaryDirectory(prefix="rt-sa-") as d:
        path = os.path.join(d, "com.sparecores.ResourceTracker")
        reply, rc, err = activate(path, path)
        assert rc == 0, (rc, err)
        assert reply == "fd=3 cloexec=1 nonblock=1 listen_fds=unset\n", reply

        # The socket the manager passed is bound elsewhere: the probe refuses
        # it (the daemon would bind its own) and the client sees EOF.
        other = os.path.join(d, "other")
        reply, rc, err = activate(other, path)
        assert rc == 1 and reply == "", (rc, reply)
        assert "no-fd" in err and f"no socket for {path}" in err, err
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
