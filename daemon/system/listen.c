#include "system/listen.h"

#include "rt/paths.h"
#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static bool someone_listens(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    rt_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    bool ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    close(fd);
    return ok;
}

int rt_listen_unix(const char *path, int dirfd, mode_t mode, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    /* In a directory of ours, by its descriptor: nothing renamed into its
     * path meanwhile is followed. */
    const char *name = dirfd >= 0 ? rt_path_base(path) : path;
    bool fits = dirfd < 0 ? strlen(path) < sizeof(sa.sun_path)
                          : rt_fd_path(sa.sun_path, sizeof(sa.sun_path), dirfd, name) == 0;
    if (!fits) {
        snprintf(err, errlen, "socket path too long: %s", path);
        return -ENAMETOOLONG;
    }
    if (dirfd < 0)
        strcpy(sa.sun_path, path);
    struct stat st;
    if (fstatat(dirfd >= 0 ? dirfd : AT_FDCWD, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            snprintf(err, errlen, "%s exists and is not a socket", path);
            return -EEXIST;
        }
        if (someone_listens(sa.sun_path)) {
            snprintf(err, errlen, "another daemon is already listening on %s", path);
            return -EADDRINUSE;
        }
        unlinkat(dirfd >= 0 ? dirfd : AT_FDCWD, name, 0);
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -errno;
    }
    /* Create it with the final mode: no window where it is wider open. */
    mode_t old = umask(0777 & ~mode);
    int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (r < 0 || listen(fd, SOMAXCONN) < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(e));
        close(fd);
        return -e;
    }
    if (chmod(sa.sun_path, mode) < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot set the mode of %s: %s", path, strerror(e));
        close(fd);
        unlinkat(dirfd >= 0 ? dirfd : AT_FDCWD, name, 0);
        return -e;
    }
    return fd;
}
