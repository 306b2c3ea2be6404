#include "proc/pidfd.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int rt_pidfd_open(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* The value of "NAME:\t…" in an fdinfo text, or NULL. */
static const char *field(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p; p = strchr(p, '\n')) {
        if (*p == '\n')
            p++;
        if (strncmp(p, name, n) == 0 && p[n] == ':')
            return p + n + 1;
    }
    return NULL;
}

pid_t rt_pidfd_pid(int fd)
{
    char path[64], text[1024];
    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
    int in = open(path, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -1;
    ssize_t n = read(in, text, sizeof(text) - 1);
    close(in);
    if (n <= 0)
        return -1;
    text[n] = '\0';
    const char *pid = field(text, "Pid"), *flags = field(text, "flags");
    /* PIDFD_THREAD (Linux 6.9) is O_EXCL: a thread is not a process. */
    if (!pid || !flags || (strtoul(flags, NULL, 8) & O_EXCL))
        return -1;
    long v = strtol(pid, NULL, 10);
    return v > 0 ? (pid_t)v : 0;
}
