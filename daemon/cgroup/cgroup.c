#include "cgroup/cgroup.h"

#include "cgroup/sources.h"
#include "rt/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bounds of a walk through a cgroup's descendants. */
#define WALK_DIRS 4096
#define WALK_DEPTH 32

int rt_cgroup_open_dirs(struct rt_cgroup *cg, const struct rt_cg_host *h, const char *path)
{
    memset(cg, 0, sizeof(*cg));
    for (int i = 0; i < RT_CG_NHIER; i++)
        cg->dir[i] = -1;
    for (int i = 0; i < RT_CG_NSRC; i++)
        cg->src[i][0] = cg->src[i][1] = -1;
    char norm[4096];
    int rc = rt_cg_path_normalize(h, path, norm, sizeof(norm));
    if (rc < 0)
        return rc;
    bool any = false;
    for (int i = 0; i < RT_CG_NHIER; i++) {
        int fd = rt_cg_open_dir(h, (enum rt_cg_hier)i, norm);
        if (fd >= 0) {
            cg->dir[i] = fd;
            any = true;
        } else if (fd != -ENOENT) {
            rt_cgroup_close(cg);
            return fd;
        }
    }
    if (!any)
        return -ENOENT;
    cg->path = rt_xstrdup(norm);
    return 0;
}

int rt_cgroup_open(struct rt_cgroup *cg, const struct rt_cg_host *h, const char *path)
{
    int rc = rt_cgroup_open_dirs(cg, h, path);
    if (rc == 0)
        rt_cg_sources_open(cg);
    return rc;
}

void rt_cgroup_close(struct rt_cgroup *cg)
{
    for (int i = 0; i < RT_CG_NHIER; i++) {
        if (cg->dir[i] >= 0)
            close(cg->dir[i]);
        cg->dir[i] = -1;
    }
    for (int i = 0; i < RT_CG_NSRC; i++) {
        for (int part = 0; part < 2; part++) {
            if (cg->src[i][part] >= 0)
                close(cg->src[i][part]);
            cg->src[i][part] = -1;
        }
        cg->use[i] = 0;
    }
    free(cg->path);
    cg->path = NULL;
}


/* The directory the tree walks go through: v2's, else the first v1 one. */
static int main_dir(const struct rt_cgroup *cg)
{
    static const enum rt_cg_hier order[] = {RT_CG_V2,      RT_CG_MEMORY, RT_CG_PIDS,
                                            RT_CG_CPUACCT, RT_CG_BLKIO,  RT_CG_CPU};
    for (size_t i = 0; i < RT_ARRAY_SIZE(order); i++)
        if (cg->dir[order[i]] >= 0)
            return cg->dir[order[i]];
    return -1;
}

/* Calls visit(dir, ctx) for dir and each directory below it, depth first,
 * until visit returns non-zero (returned), or the bounds are hit (-E2BIG).
 * A child removed meanwhile is skipped; dir itself removed gives -ENODEV. */
static int walk(int dir, int depth, int *budget, int (*visit)(int dir, void *ctx), void *ctx)
{
    if (--*budget < 0 || depth > WALK_DEPTH)
        return -E2BIG;
    int rc = visit(dir, ctx);
    if (rc != 0)
        return rc;
    DIR *d = rt_opendir_sub(dir, ".");
    if (!d)
        return errno == ENOENT ? -ENODEV : -errno;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d))) {
        if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        int child = openat(dir, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (child < 0)
            continue; /* removed since readdir */
        rc = walk(child, depth + 1, budget, visit, ctx);
        if (rc == -ENODEV)
            rc = 0; /* the child went while we read it */
        close(child);
    }
    closedir(d);
    return rc;
}

/* Adds dir's v1 memory.oom_control "oom_kill" to *(uint64_t *)ctx. */
static int add_oom_kills(int dir, void *ctx)
{
    char buf[256];
    ssize_t n = rt_read_file_at(dir, "memory.oom_control", buf, sizeof(buf));
    const char *at = n > 0 ? strstr(buf, "oom_kill ") : NULL;
    uint64_t v;
    if (at && sscanf(at + 9, "%" SCNu64, &v) == 1)
        *(uint64_t *)ctx += v;
    return 0;
}

int rt_cgroup_read(struct rt_cgroup *cg, struct rt_cg_figures *out)
{
    int rc = rt_cg_sources_read(cg, UINT32_MAX, out);
    /* v1 counts an OOM kill in the memory cgroup of the process killed only
     * (v2's memory.events counts its subtree): Slurm's v1 plugin puts tasks
     * in step_N/task_M below the job's. The sum over the subtree, when there
     * is one: a cgroup directory's link count is 2 and one per child. */
    struct stat st;
    if (rc == 0 && (out->have & RT_CGF_OOM_KILL) && cg->dir[RT_CG_MEMORY] >= 0 &&
        rt_cg_sources_v1(cg, RT_CGF_OOM_KILL) && fstat(cg->dir[RT_CG_MEMORY], &st) == 0 && st.st_nlink > 2) {
        uint64_t kills = 0;
        int budget = WALK_DIRS;
        walk(cg->dir[RT_CG_MEMORY], 0, &budget, add_oom_kills, &kills);
        out->ev_oom_kill = kills > out->ev_oom_kill ? kills : out->ev_oom_kill;
    }
    return rc;
}

/* 1 when dir's cgroup.procs names a process. */
static int procs_any(int dir, void *ctx)
{
    (void)ctx;
    int fd = openat(dir, "cgroup.procs", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -ENODEV : -errno;
    char c;
    ssize_t n = read(fd, &c, 1);
    int e = errno;
    close(fd);
    if (n < 0)
        return e == ENODEV ? -ENODEV : -e;
    return n > 0;
}

int rt_cgroup_populated(struct rt_cgroup *cg)
{
    struct rt_cg_figures f;
    int rc = rt_cg_sources_read(cg, RT_CGF_POPULATED, &f);
    if (rc < 0)
        return rc;
    if (f.have & RT_CGF_POPULATED)
        return f.populated;
    rc = rt_cg_sources_read(cg, RT_CGF_PIDS, &f);
    if (rc < 0)
        return rc;
    if (f.have & RT_CGF_PIDS)
        return f.pids_current > 0;
    int budget = WALK_DIRS;
    rc = walk(main_dir(cg), 0, &budget, procs_any, NULL);
    return rc == -E2BIG ? 1 : rc;
}

int rt_cg_path_populated(const struct rt_cg_host *h, const char *path)
{
    static const enum rt_cg_hier order[] = {RT_CG_V2, RT_CG_MEMORY, RT_CG_PIDS, RT_CG_CPUACCT, RT_CG_BLKIO, RT_CG_CPU};
    for (size_t i = 0; i < RT_ARRAY_SIZE(order); i++) {
        int dir = rt_cg_open_dir(h, order[i], path), rc;
        if (dir < 0)
            continue;
        char buf[256];
        const char *at = order[i] == RT_CG_V2 && rt_read_file_at(dir, "cgroup.events", buf, sizeof(buf)) > 0
                             ? strstr(buf, "populated ")
                             : NULL;
        int budget = WALK_DIRS;
        rc = at ? at[10] == '1' : walk(dir, 0, &budget, procs_any, NULL);
        close(dir);
        return rc == -E2BIG ? 1 : rc;
    }
    return -ENOENT;
}

int rt_cgroup_watch(const struct rt_cgroup *cg, int inotify_fd)
{
    if (cg->dir[RT_CG_V2] < 0 || faccessat(cg->dir[RT_CG_V2], "cgroup.events", F_OK, 0) != 0)
        return -EOPNOTSUPP;
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d/cgroup.events", cg->dir[RT_CG_V2]);
    int wd = inotify_add_watch(inotify_fd, path, IN_MODIFY);
    return wd >= 0 ? wd : -errno;
}

struct pid_list {
    pid_t *v;
    size_t max, n;
};

static int cmp_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

/* Sort and drop duplicates (a process is listed in each hierarchy). */
static void compact(struct pid_list *l)
{
    qsort(l->v, l->n, sizeof(*l->v), cmp_pid);
    size_t u = 0;
    for (size_t i = 0; i < l->n; i++)
        if (u == 0 || l->v[u - 1] != l->v[i])
            l->v[u++] = l->v[i];
    l->n = u;
}

static int collect_pids(int dir, void *ctx)
{
    struct pid_list *l = ctx;
    int fd = openat(dir, "cgroup.procs", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -ENODEV : -errno;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return -ENOMEM;
    }
    long pid;
    int rc = 0;
    while (rc == 0 && fscanf(f, "%ld", &pid) == 1) {
        if (l->n == l->max)
            compact(l);
        if (l->n == l->max)
            rc = -E2BIG;
        else if (pid > 0)
            l->v[l->n++] = (pid_t)pid;
    }
    if (rc == 0 && ferror(f))
        rc = errno == ENODEV ? -ENODEV : -EIO;
    fclose(f);
    return rc;
}

int rt_cgroup_pids(const struct rt_cgroup *cg, pid_t *pids, size_t max, size_t *n)
{
    struct pid_list l = {pids, max, 0};
    int budget = WALK_DIRS, rc = 0;
    for (int i = 0; i < RT_CG_NHIER && rc == 0; i++) {
        if (cg->dir[i] < 0)
            continue;
        rc = walk(cg->dir[i], 0, &budget, collect_pids, &l);
    }
    compact(&l);
    *n = l.n;
    return rc;
}

int rt_cgroup_owner(const struct rt_cgroup *cg, uid_t *uid)
{
    bool any = false;
    for (int i = 0; i < RT_CG_NHIER; i++) {
        struct stat st;
        if (cg->dir[i] < 0)
            continue;
        if (fstat(cg->dir[i], &st) != 0)
            return -errno;
        if (any && st.st_uid != *uid)
            return -ENOTUNIQ;
        *uid = st.st_uid;
        any = true;
    }
    return any ? 0 : -ENOENT;
}

int rt_cgroup_kill(const struct rt_cgroup *cg)
{
    if (cg->dir[RT_CG_V2] < 0)
        return -EOPNOTSUPP;
    int fd = openat(cg->dir[RT_CG_V2], "cgroup.kill", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -EOPNOTSUPP : -errno;
    int rc = write(fd, "1", 1) == 1 ? 0 : -errno;
    close(fd);
    return rc;
}

int rt_cgroup_reset_peak(struct rt_cgroup *cg)
{
    return rt_cg_sources_reset_peak(cg);
}
