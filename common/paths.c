#include "rt/paths.h"

#include "rt/util.h"

#include <errno.h>
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
    if (taken(dir) && (rt_user_state_dir(buf, size) < 0 ||
                       snprintf(dir, sizeof(dir), "%s/run", buf) >= (int)sizeof(dir)))
        return -1;
    int n = snprintf(buf, size, "%s/%s", dir, RT_SOCKET_NAME);
    /* A Unix socket's path must fit sun_path. */
    return n > 0 && (size_t)n < size && (size_t)n < sizeof(((struct sockaddr_un *)0)->sun_path) ? 0 : -1;
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

int rt_user_socket_dir_prepare(const char *socket_path)
{
    char tmp[4096];
    rt_strlcpy(tmp, socket_path, sizeof(tmp));
    char *dir = dirname(tmp);
    int r = make_parents(dir);
    if (r < 0)
        return r;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -errno;
    struct stat st;
    if (lstat(dir, &st) < 0)
        return -errno;
    /* A directory planted by another user (e.g. in /tmp) must not be used. */
    if (!S_ISDIR(st.st_mode) || st.st_uid != getuid())
        return -EPERM;
    /* Others who may write here could replace our socket: then it becomes
     * ours alone. A sticky directory (/tmp) keeps their files apart, and one
     * only we may write to keeps its mode: --socket may name a directory
     * others use (as root, /tmp or /run). */
    if ((st.st_mode & 0022) && !(st.st_mode & S_ISVTX) && chmod(dir, 0700) < 0)
        return -errno;
    return 0;
}
