#include "rt/paths.h"

#include "rt/util.h"

#include <errno.h>
#include <libgen.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool abs_env(const char *name, const char **out)
{
    const char *v = getenv(name);
    if (!v || v[0] != '/')
        return false;
    *out = v;
    return true;
}

int rt_user_socket_path(char *buf, size_t size)
{
    const char *run;
    int n;
    if (abs_env("XDG_RUNTIME_DIR", &run))
        n = snprintf(buf, size, "%s/resource-tracker/%s", run, RT_SOCKET_NAME);
    else
        n = snprintf(buf, size, "/tmp/resource-tracker-%u/%s", (unsigned)getuid(), RT_SOCKET_NAME);
    return n > 0 && (size_t)n < size ? 0 : -1;
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

int rt_user_socket_dir_prepare(const char *socket_path)
{
    char tmp[4096];
    rt_strlcpy(tmp, socket_path, sizeof(tmp));
    const char *dir = dirname(tmp);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -errno;
    struct stat st;
    if (lstat(dir, &st) < 0)
        return -errno;
    /* A directory planted by another user (e.g. in /tmp) must not be used. */
    if (!S_ISDIR(st.st_mode) || st.st_uid != getuid())
        return -EPERM;
    if ((st.st_mode & 0077) && chmod(dir, 0700) < 0)
        return -errno;
    return 0;
}
