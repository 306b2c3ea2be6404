/* The files a cgroup's figures come from, one table: for each group the v2
 * file first, then its v1 equivalents (docs/cgroups.md has the same table
 * for people). A source is one file, or two read as one (v1 cpuacct.usage and
 * cpuacct.stat); its parser sees each line and sets the figures it found. */
#include "cgroup/sources.h"

#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What a parser works with while it reads one source. */
struct pctx {
    struct rt_cg_figures *f;
    const struct source *s;
    uint32_t use;  /* the groups it may set */
    int part;      /* which of the source's files */
    uint32_t seen; /* keys found, parser-specific bits */
    uint64_t v[8];
};

struct source {
    enum rt_cg_hier hier;
    const char *file[2];
    uint32_t gives;
    void (*line)(struct pctx *c, char *line);
    void (*done)(struct pctx *c);
    size_t off;     /* the field of one-value and PSI sources */
    bool resettable; /* v2 memory.peak, memory.swap.peak: opened for writing */
};

/* Set group `bit` (and so let the caller write its fields) when allowed. */
static bool set(struct pctx *c, uint32_t bit)
{
    if (!(c->use & bit))
        return false;
    c->f->have |= bit;
    return true;
}

static uint64_t *field(struct pctx *c)
{
    return (uint64_t *)((char *)c->f + c->s->off);
}

/* "KEY VALUE": the value of a known key into v[i] (seen bit i). */
static void keyed(struct pctx *c, char *line, const char *const *keys, size_t nkeys)
{
    char *sp = strchr(line, ' ');
    if (!sp)
        return;
    *sp = '\0';
    for (size_t i = 0; i < nkeys; i++) {
        if (keys[i] && strcmp(line, keys[i]) == 0) {
            if (rt_parse_u64(rt_trim(sp + 1), &c->v[i]))
                c->seen |= 1u << i;
            return;
        }
    }
}

/* A value that may say "no limit": "max" (v2), -1 (v1 cpu quota) or v1's
 * page-counter maximum (any value from 2^62 on). */
static bool limit_value(char *s, uint64_t *out)
{
    s = rt_trim(s);
    if (strcmp(s, "max") == 0 || strcmp(s, "-1") == 0) {
        *out = RT_CG_UNLIMITED;
        return true;
    }
    if (!rt_parse_u64(s, out))
        return false;
    if (*out >= (1ULL << 62))
        *out = RT_CG_UNLIMITED;
    return true;
}

/* ---- one value ---- */

static void one_line(struct pctx *c, char *line)
{
    if (!c->seen && rt_parse_u64(rt_trim(line), &c->v[0]))
        c->seen = 1;
}

static void limit_line(struct pctx *c, char *line)
{
    if (!c->seen && limit_value(line, &c->v[0]))
        c->seen = 1;
}

static void one_done(struct pctx *c)
{
    if (c->seen && set(c, c->s->gives))
        *field(c) = c->v[0];
}

/* ---- CPU: v2 cpu.stat; v1 cpu.stat (throttling), cpuacct.usage + cpuacct.stat ---- */

enum { C_USAGE, C_USER, C_SYSTEM, C_PERIODS, C_THROTTLED, C_THROTTLED_US, C_THROTTLED_NS };

static void cpu_stat_line(struct pctx *c, char *line)
{
    static const char *const keys[] = {
        [C_USAGE] = "usage_usec",         [C_USER] = "user_usec",
        [C_SYSTEM] = "system_usec",       [C_PERIODS] = "nr_periods",
        [C_THROTTLED] = "nr_throttled",   [C_THROTTLED_US] = "throttled_usec",
        [C_THROTTLED_NS] = "throttled_time",
    };
    keyed(c, line, keys, RT_ARRAY_SIZE(keys));
}

static void cpuacct_line(struct pctx *c, char *line)
{
    if (c->part == 0) { /* cpuacct.usage: ns */
        uint64_t ns;
        if (rt_parse_u64(rt_trim(line), &ns)) {
            c->v[C_USAGE] = ns / 1000;
            c->seen |= 1u << C_USAGE;
        }
        return;
    }
    /* cpuacct.stat: "user N", "system N" in USER_HZ ticks */
    static const char *const keys[] = {[C_USER] = "user", [C_SYSTEM] = "system"};
    keyed(c, line, keys, RT_ARRAY_SIZE(keys));
}

static void cpu_done(struct pctx *c)
{
    struct rt_cg_figures *f = c->f;
    uint32_t s = c->seen;
    if (c->s->line == cpuacct_line) {
        long hz = sysconf(_SC_CLK_TCK);
        uint64_t us = (uint64_t)1000000 / (uint64_t)(hz > 0 ? hz : 100);
        c->v[C_USER] *= us;
        c->v[C_SYSTEM] *= us;
    }
    if ((s & 1u << C_USAGE) && set(c, RT_CGF_CPU))
        f->cpu_usage_usec = c->v[C_USAGE];
    if ((s & 1u << C_USER) && (s & 1u << C_SYSTEM) && set(c, RT_CGF_CPU_SPLIT)) {
        f->cpu_user_usec = c->v[C_USER];
        f->cpu_system_usec = c->v[C_SYSTEM];
    }
    if (s & 1u << C_THROTTLED_NS) {
        c->v[C_THROTTLED_US] = c->v[C_THROTTLED_NS] / 1000;
        s |= 1u << C_THROTTLED_US;
    }
    uint32_t thr = 1u << C_PERIODS | 1u << C_THROTTLED | 1u << C_THROTTLED_US;
    if ((s & thr) == thr && set(c, RT_CGF_THROTTLE)) {
        f->nr_periods = c->v[C_PERIODS];
        f->nr_throttled = c->v[C_THROTTLED];
        f->throttled_usec = c->v[C_THROTTLED_US];
    }
}

/* cpu.max "QUOTA PERIOD" (QUOTA "max"); v1 cpu.cfs_quota_us (-1: none) + cpu.cfs_period_us */
static void cpu_max_line(struct pctx *c, char *line)
{
    char *sp = strchr(rt_trim(line), ' ');
    if (sp)
        *sp++ = '\0';
    if (c->part == 0 && limit_value(line, &c->v[0]))
        c->seen |= 1;
    char *period = c->part == 0 ? sp : line;
    if (period && rt_parse_u64(rt_trim(period), &c->v[1]) && c->v[1] > 0)
        c->seen |= 2;
}

static void cpu_max_done(struct pctx *c)
{
    if (c->seen == 3 && set(c, RT_CGF_CPU_MAX)) {
        c->f->cpu_quota_usec = c->v[0];
        c->f->cpu_period_usec = c->v[1];
    }
}

/* ---- memory.stat (v2 keys; v1 hierarchical total_* keys) ---- */

enum {
    M_ANON, M_FILE, M_SHMEM, M_KERNEL, M_STACK, M_PAGETABLES, M_PERCPU, M_SLAB,
    M_SLAB_R, M_SLAB_U, M_VMALLOC, M_SEC_PAGETABLES, M_SWAP, M_N
};

static void mem_stat_line(struct pctx *c, char *line)
{
    static const char *const v2[M_N] = {
        [M_ANON] = "anon", [M_FILE] = "file", [M_SHMEM] = "shmem", [M_KERNEL] = "kernel",
        [M_STACK] = "kernel_stack", [M_PAGETABLES] = "pagetables", [M_PERCPU] = "percpu",
        [M_SLAB] = "slab", [M_SLAB_R] = "slab_reclaimable", [M_SLAB_U] = "slab_unreclaimable",
        [M_VMALLOC] = "vmalloc", [M_SEC_PAGETABLES] = "sec_pagetables",
    };
    static const char *const v1[M_N] = {
        [M_ANON] = "total_rss", [M_FILE] = "total_cache", [M_SHMEM] = "total_shmem",
        [M_SWAP] = "total_swap",
    };
    const char *const *keys = c->s->hier == RT_CG_V2 ? v2 : v1;
    /* v[] holds anon, file, shmem, kernel, swap, the other parts of
     * kernel, slab, and slab_reclaimable + slab_unreclaimable. */
    char *sp = strchr(line, ' ');
    if (!sp)
        return;
    *sp = '\0';
    for (int i = 0; i < M_N; i++) {
        uint64_t v;
        if (keys[i] && strcmp(line, keys[i]) == 0 && rt_parse_u64(rt_trim(sp + 1), &v)) {
            c->seen |= 1u << i;
            switch (i) {
            case M_ANON: c->v[0] = v; break;
            case M_FILE: c->v[1] = v; break;
            case M_SHMEM: c->v[2] = v; break;
            case M_KERNEL: c->v[3] = v; break;
            case M_SWAP: c->v[4] = v; break;
            case M_SLAB: c->v[6] = v; break;
            case M_SLAB_R:
            case M_SLAB_U: c->v[7] += v; break;
            default: c->v[5] += v; break; /* the parts of "kernel" besides slab */
            }
            return;
        }
    }
}

static void mem_stat_done(struct pctx *c)
{
    struct rt_cg_figures *f = c->f;
    uint32_t s = c->seen, stat = 1u << M_ANON | 1u << M_FILE | 1u << M_SHMEM;
    if ((s & stat) == stat && set(c, RT_CGF_MEM_STAT)) {
        f->mem_anon = c->v[0];
        f->mem_file = c->v[1];
        f->mem_shmem = c->v[2];
    }
    /* "kernel" (5.18+), else the sum of its parts that older kernels list */
    uint32_t parts = 1u << M_STACK | 1u << M_PAGETABLES;
    if ((s & 1u << M_KERNEL) && set(c, RT_CGF_MEM_KERNEL))
        f->mem_kernel = c->v[3];
    else if ((s & parts) == parts && set(c, RT_CGF_MEM_KERNEL))
        f->mem_kernel = c->v[5] + ((s & 1u << M_SLAB) ? c->v[6] : c->v[7]);
    if ((s & 1u << M_SWAP) && set(c, RT_CGF_SWAP))
        f->swap_current = c->v[4];
}

/* ---- memory.events (v2); v1 memory.oom_control ---- */

enum { E_HIGH, E_MAX, E_OOM, E_OOM_KILL };

static void mem_events_line(struct pctx *c, char *line)
{
    static const char *const keys[] = {
        [E_HIGH] = "high", [E_MAX] = "max", [E_OOM] = "oom", [E_OOM_KILL] = "oom_kill",
    };
    keyed(c, line, keys, RT_ARRAY_SIZE(keys));
}

static void mem_events_done(struct pctx *c)
{
    struct rt_cg_figures *f = c->f;
    uint32_t s = c->seen;
    if ((s & 1u << E_OOM_KILL) && set(c, RT_CGF_OOM_KILL))
        f->ev_oom_kill = c->v[E_OOM_KILL];
    if ((s & 1u << E_MAX) && set(c, RT_CGF_MEM_EV_MAX))
        f->ev_max = c->v[E_MAX];
    if ((s & 1u << E_HIGH) && (s & 1u << E_OOM) && set(c, RT_CGF_MEM_EV)) {
        f->ev_high = c->v[E_HIGH];
        f->ev_oom = c->v[E_OOM];
    }
}

/* ---- I/O: io.stat; v1 blkio.throttle.io_service_bytes + io_serviced ---- */

static void io_stat_line(struct pctx *c, char *line)
{
    static const char *const keys[] = {"rbytes=", "wbytes=", "rios=", "wios="};
    char *save = NULL;
    if (!strtok_r(line, " ", &save)) /* MAJ:MIN */
        return;
    for (char *t = strtok_r(NULL, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        for (int i = 0; i < 4; i++) {
            uint64_t v;
            size_t n = strlen(keys[i]);
            if (strncmp(t, keys[i], n) == 0 && rt_parse_u64(t + n, &v))
                c->v[i] += v;
        }
    }
    c->seen = 1;
}

/* "MAJ:MIN Read N" / "MAJ:MIN Write N"; the "Total" lines are skipped. */
static void blkio_line(struct pctx *c, char *line)
{
    char *save = NULL, *dev = strtok_r(line, " ", &save), *op = strtok_r(NULL, " ", &save);
    char *num = strtok_r(NULL, " ", &save);
    uint64_t v;
    if (!dev || !op || !num || !strchr(dev, ':') || !rt_parse_u64(num, &v))
        return;
    int base = c->part == 0 ? 0 : 2;
    if (strcmp(op, "Read") == 0)
        c->v[base] += v;
    else if (strcmp(op, "Write") == 0)
        c->v[base + 1] += v;
}

static void io_done(struct pctx *c)
{
    /* A readable file with no device lines: no I/O yet, all zero. */
    if (set(c, RT_CGF_IO)) {
        c->f->io_rbytes = c->v[0];
        c->f->io_wbytes = c->v[1];
        c->f->io_rios = c->v[2];
        c->f->io_wios = c->v[3];
    }
}

/* ---- PSI: "some avg10=… total=N", "full …" ---- */

static void psi_line(struct pctx *c, char *line)
{
    int i = strncmp(line, "some ", 5) == 0 ? 0 : strncmp(line, "full ", 5) == 0 ? 1 : -1;
    char *t = i >= 0 ? strstr(line, " total=") : NULL;
    if (t && rt_parse_u64(rt_trim(t + 7), &c->v[i]))
        c->seen |= 1u << i;
}

static void psi_done(struct pctx *c)
{
    struct rt_cg_psi *p = (struct rt_cg_psi *)(void *)field(c);
    uint32_t gives = c->s->gives;
    if (gives & RT_CGF_PSI_CPU_FULL) { /* cpu: "full" only from 5.13 */
        if ((c->seen & 1) && set(c, RT_CGF_PSI_CPU))
            p->some_usec = c->v[0];
        if ((c->seen & 2) && set(c, RT_CGF_PSI_CPU_FULL))
            p->full_usec = c->v[1];
    } else if (c->seen == 3 && set(c, gives)) {
        p->some_usec = c->v[0];
        p->full_usec = c->v[1];
    }
}

/* ---- cgroup.events ---- */

static void events_line(struct pctx *c, char *line)
{
    static const char *const keys[] = {"populated"};
    keyed(c, line, keys, 1);
}

static void events_done(struct pctx *c)
{
    if (c->seen && set(c, RT_CGF_POPULATED))
        c->f->populated = c->v[0] != 0;
}

#define F(x) offsetof(struct rt_cg_figures, x)
#define ONE(h, file, bit, fld) {h, {file, NULL}, bit, one_line, one_done, F(fld), false}
#define PEAK(file, bit, fld) {RT_CG_V2, {file, NULL}, bit, one_line, one_done, F(fld), true}
#define LIMIT(h, file, bit, fld) {h, {file, NULL}, bit, limit_line, one_done, F(fld), false}
#define PSI(file, bits, fld) {RT_CG_V2, {file, NULL}, bits, psi_line, psi_done, F(fld), false}

/* v2 first, then v1: a group is read from the first source that has it. */
static const struct source sources[] = {
    {RT_CG_V2, {"cpu.stat", NULL}, RT_CGF_CPU | RT_CGF_CPU_SPLIT | RT_CGF_THROTTLE, cpu_stat_line, cpu_done, 0, false},
    ONE(RT_CG_V2, "memory.current", RT_CGF_MEM, mem_current),
    PEAK("memory.peak", RT_CGF_MEM_PEAK, mem_peak),
    {RT_CG_V2, {"memory.stat", NULL}, RT_CGF_MEM_STAT | RT_CGF_MEM_KERNEL, mem_stat_line, mem_stat_done, 0, false},
    ONE(RT_CG_V2, "memory.swap.current", RT_CGF_SWAP, swap_current),
    PEAK("memory.swap.peak", RT_CGF_SWAP_PEAK, swap_peak),
    {RT_CG_V2, {"memory.events", NULL}, RT_CGF_OOM_KILL | RT_CGF_MEM_EV_MAX | RT_CGF_MEM_EV, mem_events_line,
     mem_events_done, 0, false},
    LIMIT(RT_CG_V2, "memory.max", RT_CGF_MEM_MAX, mem_max),
    LIMIT(RT_CG_V2, "memory.high", RT_CGF_MEM_HIGH, mem_high),
    {RT_CG_V2, {"cpu.max", NULL}, RT_CGF_CPU_MAX, cpu_max_line, cpu_max_done, 0, false},
    {RT_CG_V2, {"io.stat", NULL}, RT_CGF_IO, io_stat_line, io_done, 0, false},
    ONE(RT_CG_V2, "pids.current", RT_CGF_PIDS, pids_current),
    ONE(RT_CG_V2, "pids.peak", RT_CGF_PIDS_PEAK, pids_peak),
    PSI("cpu.pressure", RT_CGF_PSI_CPU | RT_CGF_PSI_CPU_FULL, psi_cpu),
    PSI("memory.pressure", RT_CGF_PSI_MEM, psi_mem),
    PSI("io.pressure", RT_CGF_PSI_IO, psi_io),
    {RT_CG_V2, {"cgroup.events", NULL}, RT_CGF_POPULATED, events_line, events_done, 0, false},

    {RT_CG_CPUACCT, {"cpuacct.usage", "cpuacct.stat"}, RT_CGF_CPU | RT_CGF_CPU_SPLIT, cpuacct_line, cpu_done, 0, false},
    {RT_CG_CPU, {"cpu.stat", NULL}, RT_CGF_THROTTLE, cpu_stat_line, cpu_done, 0, false},
    {RT_CG_CPU, {"cpu.cfs_quota_us", "cpu.cfs_period_us"}, RT_CGF_CPU_MAX, cpu_max_line, cpu_max_done, 0, false},
    ONE(RT_CG_MEMORY, "memory.usage_in_bytes", RT_CGF_MEM, mem_current),
    ONE(RT_CG_MEMORY, "memory.max_usage_in_bytes", RT_CGF_MEM_PEAK, mem_peak),
    {RT_CG_MEMORY, {"memory.stat", NULL}, RT_CGF_MEM_STAT | RT_CGF_SWAP, mem_stat_line, mem_stat_done, 0, false},
    ONE(RT_CG_MEMORY, "memory.kmem.usage_in_bytes", RT_CGF_MEM_KERNEL, mem_kernel),
    {RT_CG_MEMORY, {"memory.oom_control", NULL}, RT_CGF_OOM_KILL, mem_events_line, mem_events_done, 0, false},
    ONE(RT_CG_MEMORY, "memory.failcnt", RT_CGF_MEM_EV_MAX, ev_max),
    LIMIT(RT_CG_MEMORY, "memory.limit_in_bytes", RT_CGF_MEM_MAX, mem_max),
    {RT_CG_BLKIO, {"blkio.throttle.io_service_bytes_recursive", "blkio.throttle.io_serviced_recursive"}, RT_CGF_IO,
     blkio_line, io_done, 0, false},
    {RT_CG_BLKIO, {"blkio.throttle.io_service_bytes", "blkio.throttle.io_serviced"}, RT_CGF_IO, blkio_line, io_done,
     0, false},
    ONE(RT_CG_PIDS, "pids.current", RT_CGF_PIDS, pids_current),
    ONE(RT_CG_PIDS, "pids.peak", RT_CGF_PIDS_PEAK, pids_peak),
};

_Static_assert(RT_ARRAY_SIZE(sources) <= RT_CG_NSRC, "RT_CG_NSRC too small");

/* Feed the file's lines to the parser, read from offset 0 (a cgroup file
 * read from 0 is generated afresh). A short read is the end: kernfs returns
 * a one-record file (all of these) whole, as far as the buffer goes. */
static int feed(int fd, struct pctx *c)
{
    char buf[4096];
    size_t have = 0;
    off_t off = 0;
    for (;;) {
        size_t want = sizeof(buf) - 1 - have;
        ssize_t r = pread(fd, buf + have, want, off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        off += r;
        have += (size_t)r;
        buf[have] = '\0';
        char *p = buf, *nl;
        while ((nl = memchr(p, '\n', (size_t)(buf + have - p)))) {
            *nl = '\0';
            c->s->line(c, p);
            p = nl + 1;
        }
        size_t rest = (size_t)(buf + have - p);
        if ((size_t)r < want) {
            if (rest)
                c->s->line(c, p);
            return 0;
        }
        if (rest == sizeof(buf) - 1) /* no line is this long: drop it */
            rest = 0;
        memmove(buf, p, rest);
        have = rest;
    }
}

/* Read source i with permission to set `use`; 0 or -errno. */
static int read_source(const struct rt_cgroup *cg, int i, uint32_t use, struct rt_cg_figures *out)
{
    struct pctx c = {.f = out, .s = &sources[i], .use = use};
    for (int part = 0; part < 2 && cg->src[i][part] >= 0; part++) {
        c.part = part;
        int rc = feed(cg->src[i][part], &c);
        if (rc < 0)
            return rc;
    }
    sources[i].done(&c);
    return 0;
}

static void close_source(struct rt_cgroup *cg, int i)
{
    for (int part = 0; part < 2; part++) {
        if (cg->src[i][part] >= 0)
            close(cg->src[i][part]);
        cg->src[i][part] = -1;
    }
    cg->use[i] = 0;
}

void rt_cg_sources_open(struct rt_cgroup *cg)
{
    uint32_t covered = 0;
    for (int i = 0; i < RT_CG_NSRC; i++) {
        cg->src[i][0] = cg->src[i][1] = -1;
        cg->use[i] = 0;
    }
    cg->rw = 0;
    for (int i = 0; i < (int)RT_ARRAY_SIZE(sources); i++) {
        const struct source *s = &sources[i];
        uint32_t want = s->gives & ~covered;
        int dir = cg->dir[s->hier];
        if (!want || dir < 0)
            continue;
        bool ok = true;
        for (int part = 0; part < 2 && s->file[part] && ok; part++) {
            int fd = -1;
            /* A peak written through its own fd resets that fd's peak (6.12+). */
            if (s->resettable) {
                fd = openat(dir, s->file[part], O_RDWR | O_CLOEXEC | O_NOFOLLOW);
                if (fd >= 0)
                    cg->rw |= 1u << i;
            }
            if (fd < 0)
                fd = openat(dir, s->file[part], O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
            cg->src[i][part] = fd;
            ok = fd >= 0;
        }
        /* What it really gives: v2 cpu.stat has throttling only with the cpu controller. */
        struct rt_cg_figures probe = {0};
        if (ok && read_source(cg, i, want, &probe) == 0 && probe.have) {
            cg->use[i] = probe.have;
            covered |= probe.have;
        } else {
            cg->rw &= ~(1u << i);
            close_source(cg, i);
        }
    }
}

int rt_cg_sources_read(struct rt_cgroup *cg, uint32_t groups, struct rt_cg_figures *out)
{
    memset(out, 0, sizeof(*out));
    int rc = 0;
    for (int i = 0; i < (int)RT_ARRAY_SIZE(sources); i++) {
        if (!(cg->use[i] & groups))
            continue;
        int r = read_source(cg, i, cg->use[i], out);
        if (r == -ENODEV || r == -ENOENT)
            rc = -ENODEV;
    }
    return rc;
}

bool rt_cg_sources_v1(const struct rt_cgroup *cg, uint32_t group)
{
    for (int i = 0; i < (int)RT_ARRAY_SIZE(sources); i++)
        if (cg->use[i] & group)
            return sources[i].hier != RT_CG_V2;
    return false;
}

int rt_cg_sources_reset_peak(struct rt_cgroup *cg)
{
    int rc = -EOPNOTSUPP;
    for (int i = 0; i < (int)RT_ARRAY_SIZE(sources); i++) {
        if (!(cg->rw & 1u << i))
            continue;
        if (pwrite(cg->src[i][0], "reset\n", 6, 0) != 6)
            return errno == ENODEV ? -ENODEV : -EOPNOTSUPP;
        rc = 0;
    }
    return rc;
}
