#include "cgroup/make.h"

#include "rt/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The hierarchies a made cgroup lives in (not v1 cpu: see make.h). */
static const enum rt_cg_hier targets[] = {RT_CG_V2, RT_CG_MEMORY, RT_CG_CPUACCT, RT_CG_BLKIO, RT_CG_PIDS};

#define REMOVE_DEPTH 32

/* Whether hierarchy targets[k] is mounted and not the mount of an earlier
 * target (a co-mount such as "cpuacct,blkio" is one directory). */
static bool target(const struct rt_cg_host *h, size_t k)
{
    const struct rt_cg_mount *m = &h->m[targets[k]];
    if (m->fd < 0)
        return false;
    for (size_t j = 0; j < k; j++) {
        const struct rt_cg_mount *o = &h->m[targets[j]];
        if (o->fd >= 0 && strcmp(o->point, m->point) == 0)
            return false;
    }
    return true;
}

static bool has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

/* v2: let dir's children have the memory, io and pids controllers. A
 * failure (EBUSY: dir has processes of its own) leaves those figures
 * absent in the children; nothing else depends on it. */
static void enable_controllers(int dir)
{
    static const char *const wanted[] = {"memory", "io", "pids"};
    char avail[512], on[512], cmd[64];
    if (rt_read_file_at(dir, "cgroup.controllers", avail, sizeof(avail)) < 0)
        return;
    if (rt_read_file_at(dir, "cgroup.subtree_control", on, sizeof(on)) < 0)
        on[0] = '\0';
    size_t len = 0;
    for (size_t i = 0; i < RT_ARRAY_SIZE(wanted); i++)
        if (has_word(avail, wanted[i]) && !has_word(on, wanted[i]))
            len += (size_t)snprintf(cmd + len, sizeof(cmd) - len, "%s+%s", len ? " " : "", wanted[i]);
    if (!len)
        return;
    int fd = openat(dir, "cgroup.subtree_control", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t w = write(fd, cmd, len);
        (void)w;
        close(fd);
    }
}

/* Make `rel` ("/a/b") below the mount of hier, parents included. */
static int make_one(const struct rt_cg_host *h, enum rt_cg_hier hier, const char *rel)
{
    int cur = openat(h->m[hier].fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cur < 0)
        return -errno;
    int rc;
    char name[256];
    while ((rc = rt_cg_path_next(&rel, name)) > 0) {
        bool last = rel[strspn(rel, "/")] == '\0';
        if (hier == RT_CG_V2)
            enable_controllers(cur);
        bool made = mkdirat(cur, name, 0755) == 0;
        if (!made && (errno != EEXIST || last)) {
            rc = -errno;
            break;
        }
        int next = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0)
            rc = -errno;
        else if (made && fchmod(next, 0755) != 0) /* whatever the umask */
            rc = -errno;
        close(cur);
        cur = next;
        if (rc < 0)
            break;
    }
    if (cur >= 0)
        close(cur);
    return rc;
}

/* rmdir the directories below dir, deepest first; 0 or the first -errno. */
static int remove_below(int dir, int depth)
{
    if (depth > REMOVE_DEPTH)
        return -ELOOP;
    DIR *d = rt_opendir_sub(dir, ".");
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        int child = openat(dir, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (child < 0)
            continue;
        int r = remove_below(child, depth + 1);
        close(child);
        if (r == 0 && unlinkat(dir, de->d_name, AT_REMOVEDIR) != 0 && errno != ENOENT)
            r = -errno;
        if (rc == 0)
            rc = r;
    }
    closedir(d);
    return rc;
}

/* Remove `path` in one hierarchy: itself, or when cgroups below it keep
 * it (EBUSY), those first. */
static int remove_one(const struct rt_cg_host *h, enum rt_cg_hier hier, const char *path)
{
    char parent[4096];
    rt_strlcpy(parent, path, sizeof(parent));
    char *slash = strrchr(parent, '/');
    const char *leaf = path + (slash - parent) + 1;
    slash[slash == parent ? 1 : 0] = '\0';
    int pfd = rt_cg_open_dir(h, hier, parent);
    if (pfd < 0)
        return pfd == -ENOENT ? 0 : pfd;
    int rc = unlinkat(pfd, leaf, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -errno;
    if (rc == -EBUSY || rc == -ENOTEMPTY) {
        int dir = openat(pfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        rc = dir < 0 ? (errno == ENOENT ? 0 : -errno) : remove_below(dir, 0);
        if (dir >= 0)
            close(dir);
        if (dir >= 0 && unlinkat(pfd, leaf, AT_REMOVEDIR) != 0 && errno != ENOENT && rc == 0)
            rc = -errno;
    }
    close(pfd);
    return rc;
}

/* path normalised into norm; -EINVAL for the root, which is no one's to make or remove. */
static int below_root(const struct rt_cg_host *h, const char *path, char norm[4096])
{
    int rc = rt_cg_path_normalize(h, path, norm, 4096);
    return rc < 0 ? rc : strcmp(norm, "/") == 0 ? -EINVAL : 0;
}

int rt_cg_make(const struct rt_cg_host *h, const char *path)
{
    char norm[4096];
    int rc = below_root(h, path, norm);
    if (rc < 0)
        return rc;
    bool any = false;
    for (size_t k = 0; k < RT_ARRAY_SIZE(targets); k++) {
        if (!target(h, k))
            continue;
        if (!rt_cg_path_in(h, targets[k], norm))
            return -ENOENT; /* outside what is mounted */
        int fd = rt_cg_open_dir(h, targets[k], norm);
        if (fd >= 0) {
            close(fd);
            return -EEXIST;
        }
        any = true;
    }
    if (!any)
        return -ENOENT;
    for (size_t k = 0; k < RT_ARRAY_SIZE(targets); k++) {
        if (!target(h, k))
            continue;
        rc = make_one(h, targets[k], rt_cg_path_in(h, targets[k], norm));
        if (rc < 0) {
            for (size_t j = 0; j < k; j++)
                if (target(h, j))
                    remove_one(h, targets[j], norm);
            return rc;
        }
    }
    return 0;
}

int rt_cg_attach(const struct rt_cgroup *cg, pid_t pid)
{
    static const enum rt_cg_hier order[] = {RT_CG_V2,  RT_CG_MEMORY, RT_CG_CPUACCT,
                                            RT_CG_CPU, RT_CG_BLKIO,  RT_CG_PIDS};
    char buf[24];
    int n = snprintf(buf, sizeof(buf), "%d\n", (int)pid);
    for (size_t i = 0; i < RT_ARRAY_SIZE(order); i++) {
        int dir = cg->dir[order[i]];
        if (dir < 0)
            continue;
        int fd = openat(dir, "cgroup.procs", O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return errno == ENOENT ? -ENODEV : -errno;
        int rc = write(fd, buf, (size_t)n) == n ? 0 : -errno;
        close(fd);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int rt_cg_remove(const struct rt_cg_host *h, const char *path)
{
    char norm[4096];
    int rc = below_root(h, path, norm);
    if (rc < 0)
        return rc;
    for (int i = 0; i < RT_CG_NHIER; i++) {
        int r = remove_one(h, (enum rt_cg_hier)i, norm);
        if (rc == 0)
            rc = r;
    }
    return rc;
}
