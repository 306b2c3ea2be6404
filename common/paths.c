#include "rt/paths.h"

#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static bool abs_env(const char *name, const char **out)
{
    const char *v = getenv(name);
    if (!v || v[0] != '/')
        return false;
    *out = v;
    return true;
}

static const char *home_dir(void)
{
    const char *h = getenv("HOME");
    if (h && h[0] == '/')
        return h;
    struct passwd *pw = getpwuid(getuid());
    return pw && pw->pw_dir ? pw->pw_dir : NULL;
}

int rt_user_state_dir(char *buf, size_t size)
{
    const char *st, *home;
    int n;
    if (abs_env("XDG_STATE_HOME", &st))
        n = snprintf(buf, size, "%s/resource-tracker", st);
    else if ((home = home_dir()))
        n = snprintf(buf, size, "%s/.local/state/resource-tracker", home);
    else
        return -1;
    return n > 0 && (size_t)n < size ? 0 : -1;
}

/* A directory that exists and is not a directory of ours (a symlink too). */
static bool taken(const char *dir)
{
    struct stat st;
    return lstat(dir, &st) == 0 && (!S_ISDIR(st.st_mode) || st.st_uid != getuid());
}

static int socket_in(char *buf, size_t size, const char *dir)
{
    int n = snprintf(buf, size, "%s/%s", dir, RT_SOCKET_NAME);
    /* A Unix socket's path must fit sun_path. */
    return n > 0 && (size_t)n < size && (size_t)n < sizeof(((struct sockaddr_un *)0)->sun_path) ? 0 : -1;
}

int rt_user_socket_fallback(char *buf, size_t size)
{
    char dir[4096];
    if (rt_user_state_dir(dir, sizeof(dir) - 4) < 0)
        return -1;
    strcat(dir, "/run");
    return socket_in(buf, size, dir);
}

int rt_user_socket_path(char *buf, size_t size)
{
    const char *run;
    char dir[4096];
    if (abs_env("XDG_RUNTIME_DIR", &run))
        snprintf(dir, sizeof(dir), "%s/resource-tracker", run);
    else
        snprintf(dir, sizeof(dir), "/tmp/resource-tracker-%u", (unsigned)getuid());
    /* Anyone may mkdir in /tmp: a directory planted there must not keep us
     * from running. The state dir is under our home, where only we create. */
    if (taken(dir))
        return rt_user_socket_fallback(buf, size);
    return socket_in(buf, size, dir);
}

/* mkdir -p of path's parents, each new one 0700. */
static int make_parents(char *path)
{
    for (char *p = path + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        int r = mkdir(path, 0700) < 0 && errno != EEXIST ? -errno : 0;
        *p = '/';
        if (r < 0)
            return r;
    }
    return 0;
}

int rt_user_socket_dir_open(const char *socket_path, bool create)
{
    char tmp[4096];
    rt_strlcpy(tmp, socket_path, sizeof(tmp));
    char *dir = dirname(tmp);
    if (create) {
        int r = make_parents(dir);
        if (r < 0)
            return r;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
            return -errno;
    }
    /* The descriptor, not the path, is checked and used: a directory renamed
     * into the path after this (another user's, in /tmp) is never reached. */
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOTDIR || errno == ELOOP || errno == EACCES ? -EPERM : -errno;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) {
        close(fd);
        return -EPERM;
    }
    /* Others who may write here could replace our socket: then it becomes
     * ours alone. A sticky directory (/tmp) keeps their files apart, and one
     * only we may write to keeps its mode: --socket may name a directory
     * others use (as root, /tmp or /run). */
    if (create && (st.st_mode & 0022) && !(st.st_mode & S_ISVTX) && fchmod(fd, 0700) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

const char *rt_path_base(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int rt_open_parent(const char *path)
{
    char *copy = rt_xstrdup(path), *slash = strrchr(copy, '/');
    if (slash)
        slash[slash == copy] = '\0'; /* "/x": the directory is "/" */
    int fd = open(slash ? copy : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(copy);
    return fd < 0 ? -errno : fd;
}

int rt_fd_path(char *buf, size_t size, int dirfd, const char *name)
{
    int n = snprintf(buf, size, "/proc/self/fd/%d/%s", dirfd, name);
    return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}
