#include "cgroup/place.h"

#include "cgroup/cgroup.h"
#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether the comma-separated controller list names `c`. */
static bool names(const char *list, size_t len, const char *c)
{
    size_t n = strlen(c);
    for (const char *p = list, *end = list + len; p < end;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t l = comma ? (size_t)(comma - p) : (size_t)(end - p);
        if (l == n && memcmp(p, c, n) == 0)
            return true;
        p += l + 1;
    }
    return false;
}

int rt_cg_pid_paths(const struct rt_roots *roots, pid_t pid, struct rt_cg_paths *out)
{
    memset(out, 0, sizeof(*out));
    char rel[32], buf[16384];
    snprintf(rel, sizeof(rel), "%d/cgroup", (int)pid);
    ssize_t n = rt_read_file_at(roots->proc_fd, rel, buf, sizeof(buf));
    if (n < 0)
        return n == -ESRCH ? -ENOENT : (int)n;
    static const struct {
        const char *controller; /* "" for the v2 line */
        enum rt_cg_hier hier;
    } map[] = {
        {"", RT_CG_V2},          {"memory", RT_CG_MEMORY}, {"cpuacct", RT_CG_CPUACCT},
        {"cpu", RT_CG_CPU},      {"blkio", RT_CG_BLKIO},   {"pids", RT_CG_PIDS},
    };
    for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        /* "ID:CONTROLLERS:PATH" (v2: "0::PATH") */
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        const char *list = c1 + 1, *path = c2 + 1;
        size_t len = (size_t)(c2 - list);
        char norm[4096];
        if (rt_cg_path_normalize(NULL, path, norm, sizeof(norm)) < 0)
            continue;
        for (size_t i = 0; i < RT_ARRAY_SIZE(map); i++) {
            bool v2 = map[i].hier == RT_CG_V2;
            bool match = v2 ? (len == 0 && strncmp(line, "0:", 2) == 0) : names(list, len, map[i].controller);
            if (match && !out->path[map[i].hier])
                out->path[map[i].hier] = rt_xstrdup(norm);
        }
    }
    return 0;
}

void rt_cg_paths_free(struct rt_cg_paths *p)
{
    for (int i = 0; i < RT_CG_NHIER; i++) {
        free(p->path[i]);
        p->path[i] = NULL;
    }
}

/* Which file of a hierarchy gives a limit. */
enum limit { L_MEM_MAX, L_MEM_HIGH, L_CPU };

/* The limit `which` set at the cgroup dir, if any. */
static bool read_limit(int dir, enum rt_cg_hier hier, enum limit which, uint64_t *v, uint64_t *period)
{
    char buf[64];
    const char *file = which == L_MEM_MAX ? (hier == RT_CG_V2 ? "memory.max" : "memory.limit_in_bytes")
                       : which == L_MEM_HIGH ? "memory.high"
                       : hier == RT_CG_V2    ? "cpu.max"
                                             : "cpu.cfs_quota_us";
    if (rt_read_str_at(dir, file, buf, sizeof(buf)) < 0)
        return false;
    char *sp = strchr(buf, ' ');
    if (sp)
        *sp++ = '\0';
    if (strcmp(buf, "max") == 0 || strcmp(buf, "-1") == 0)
        return false;
    if (!rt_parse_u64(buf, v) || *v >= (1ULL << 62))
        return false;
    if (which != L_CPU)
        return true;
    if (hier != RT_CG_V2) {
        if (rt_read_u64_at(dir, "cpu.cfs_period_us", period) < 0)
            return false;
    } else if (!sp || !rt_parse_u64(rt_trim(sp), period)) {
        return false;
    }
    return *period > 0;
}

/* Walk from path up to the root of hierarchy `hier`, keeping the tightest
 * value of `which`. */
static void walk_up(const struct rt_cg_host *h, enum rt_cg_hier hier, const char *path, enum limit which,
                    uint64_t *best, uint64_t *best_period, char **at)
{
    char p[4096];
    if (!path || rt_strlcpy(p, path, sizeof(p)) >= sizeof(p))
        return;
    for (;;) {
        int dir = rt_cg_open_dir(h, hier, p);
        uint64_t v, period = 1;
        if (dir >= 0) {
            if (read_limit(dir, hier, which, &v, &period)) {
                /* v/period < best/best_period, as cores for CPU */
                unsigned __int128 a = (unsigned __int128)v * *best_period, b = (unsigned __int128)*best * period;
                if (*best == RT_CG_UNLIMITED || a < b) {
                    *best = v;
                    *best_period = period;
                    free(*at);
                    *at = rt_xstrdup(p);
                }
            }
            close(dir);
        }
        char *slash = strrchr(p, '/');
        if (!slash || slash == p) {
            if (strcmp(p, "/") == 0)
                return;
            p[1] = '\0';
        } else {
            *slash = '\0';
        }
    }
}

int rt_cg_limits_of(const struct rt_cg_host *h, const struct rt_cg_paths *p, struct rt_cg_limits *out)
{
    memset(out, 0, sizeof(*out));
    out->mem_max = out->mem_high = out->cpu_quota_usec = RT_CG_UNLIMITED;
    uint64_t one = 1;
    enum rt_cg_hier mem = h->m[RT_CG_MEMORY].fd >= 0 ? RT_CG_MEMORY : RT_CG_V2;
    enum rt_cg_hier cpu = h->m[RT_CG_CPU].fd >= 0 ? RT_CG_CPU : RT_CG_V2;
    walk_up(h, mem, p->path[mem], L_MEM_MAX, &out->mem_max, &one, &out->mem_max_at);
    if (mem == RT_CG_V2)
        walk_up(h, mem, p->path[mem], L_MEM_HIGH, &out->mem_high, &one, &out->mem_high_at);
    out->cpu_period_usec = 1;
    walk_up(h, cpu, p->path[cpu], L_CPU, &out->cpu_quota_usec, &out->cpu_period_usec, &out->cpu_at);
    if (!out->cpu_at)
        out->cpu_period_usec = 0;
    return 0;
}

int rt_cg_limits_of_path(const struct rt_cg_host *h, const char *path, struct rt_cg_limits *out)
{
    char norm[4096];
    int rc = rt_cg_path_normalize(h, path, norm, sizeof(norm));
    if (rc < 0) {
        memset(out, 0, sizeof(*out));
        return rc;
    }
    struct rt_cg_paths p;
    for (int i = 0; i < RT_CG_NHIER; i++)
        p.path[i] = norm;
    return rt_cg_limits_of(h, &p, out);
}

void rt_cg_limits_free(struct rt_cg_limits *l)
{
    free(l->mem_max_at);
    free(l->mem_high_at);
    free(l->cpu_at);
    l->mem_max_at = l->mem_high_at = l->cpu_at = NULL;
}
