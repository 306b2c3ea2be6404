"""One request to the stand-in service (tests/tools/rt_service_standin.c):
rtsock.py SOCKET_PATH REQUEST -> prints the reply line. Connecting may
socket-activate the service, so the timeout is generous."""
import socket
import sys

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(120)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
reply = b""
while not reply.endswith(b"\n"):
    chunk = s.recv(256)
    if not chunk:
        break
    reply += chunk
print(reply.decode().strip())
