/* Socket-activation probe: started by systemd-socket-activate (or PID 1),
 * takes the passed socket with rt_listen_fd_from_systemd(argv[1]), accepts
 * one connection and writes what it got:
 * "fd=3 cloexec=1 nonblock=1 listen_fds=unset".
 * Without a passed socket it prints "no-fd" on stderr and exits 1. */
#include "system/log.h"
#include "system/notify.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    rt_log_init(RT_LOG_STDERR, LOG_INFO);
    int fd = rt_listen_fd_from_systemd(argc > 1 ? argv[1] : NULL);
    if (fd < 0) {
        fprintf(stderr, "no-fd\n");
        return 1;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int conn = poll(&p, 1, 60000) == 1 ? accept(fd, NULL, NULL) : -1;
    if (conn < 0) {
        perror("accept");
        return 1;
    }
    dprintf(conn, "fd=%d cloexec=%d nonblock=%d listen_fds=%s\n", fd, (fcntl(fd, F_GETFD) & FD_CLOEXEC) ? 1 : 0,
            (fcntl(fd, F_GETFL) & O_NONBLOCK) ? 1 : 0, getenv("LISTEN_FDS") ? getenv("LISTEN_FDS") : "unset");
    close(conn);
    close(fd);
    return 0;
}
