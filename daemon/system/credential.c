#include "system/credential.h"

#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ssize_t rt_credential_read(const char *name, char *buf, size_t size)
{
    if (!name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return -EINVAL;
    if (size == 0)
        return -E2BIG;
    buf[0] = '\0';
    const char *dir = getenv("CREDENTIALS_DIRECTORY");
    if (!dir || !*dir)
        return 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return errno == ENOENT ? 0 : -errno;
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    int err = errno;
    close(dfd);
    if (fd < 0)
        return err == ENOENT ? 0 : -err;
    size_t len = 0;
    for (;;) {
        if (len == size) { /* one byte more than fits: too long */
            close(fd);
            explicit_bzero(buf, size);
            buf[0] = '\0';
            return -E2BIG;
        }
        ssize_t n = read(fd, buf + len, size - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err = errno;
            close(fd);
            explicit_bzero(buf, size);
            buf[0] = '\0';
            return -err;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (len == size) { /* no room for the NUL */
        explicit_bzero(buf, size);
        buf[0] = '\0';
        return -E2BIG;
    }
    buf[len] = '\0';
    char *t = rt_trim(buf);
    size_t tl = strlen(t);
    memmove(buf, t, tl + 1);
    return (ssize_t)tl;
}
