#include "collect/cpu.h"

#include "collect/cpu_times.h"

#include "system/log.h"
#include "collect/procfile.h"
#include "rt/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One /proc/stat cpu line, in ticks. */
struct cpu_times {
    uint64_t total;     /* user+nice+system+idle+iowait+irq+softirq+steal (guest is inside user) */
    uint64_t idle;      /* idle+iowait */
    uint64_t user_nice;
    uint64_t system;
};

struct cpu_line {
    unsigned index;     /* N of cpuN */
    bool ok;
    struct cpu_times t;
};

enum cg_kind { CG_NONE, CG_V2, CG_V1 };

struct rt_cpu_collector {
    int proc_fd, sys_fd;
    int proc_dir;                  /* opened once, listed from its start every tick */
    char *dents;                   /* its entries, RT_DENTS_SIZE bytes */
    struct rt_collect_hooks hooks;
    struct rt_readbuf stat;
    double clk_tck;

    struct cpu_times agg_prev;
    bool agg_have_prev;
    struct cpu_line *lines;        /* this read's cpuN lines */
    size_t lines_cap;
    struct cpu_times *core_prev;   /* by cpu index */
    bool *core_have_prev;
    size_t core_cap;

    unsigned ncores;
    bool busy_valid;
    double busy_secs;
    uint64_t mono_prev;
    double elapsed_secs;

    enum cg_kind cg_kind;
    const char *cg_path;           /* relative to sys_fd */
    struct rt_keptfile cg_file;
    bool cg_have_prev;
    uint64_t cg_prev_ns;
    double quota_cores;            /* 0 = no CFS quota */

    uint32_t procs;                /* last process count */
    bool procs_valid;
    uint64_t procs_next_ns;        /* when to list /proc again */
    uint64_t procs_listed_ns;      /* when it was last listed */
    struct rt_keptfile loadavg;
    char listed_tasks[32];         /* the kernel's tasks then (tasks_mark); "" unknown */

    bool warned_read, warned_stat, warned_line, warned_cgroup, warned_procdir;
};

/* ---- /proc/stat ---- */

/* A cpu line's numbers, folded as the figures use them. */
static bool parse_times(const char *p, struct cpu_times *t)
{
    uint64_t f[10];
    if (!rt_cpu_stat_fields(p, f))
        return false;
    t->user_nice = f[0] + f[1];
    t->system = f[2];
    t->idle = f[3] + f[4];
    t->total = f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
    return true;
}

static void ensure_core_cap(struct rt_cpu_collector *c, size_t want)
{
    if (want <= c->core_cap)
        return;
    size_t cap = c->core_cap ? c->core_cap : 8;
    while (cap < want)
        cap *= 2;
    c->core_prev = rt_xrealloc(c->core_prev, cap * sizeof(*c->core_prev));
    c->core_have_prev = rt_xrealloc(c->core_have_prev, cap * sizeof(*c->core_have_prev));
    memset(c->core_have_prev + c->core_cap, 0, (cap - c->core_cap) * sizeof(bool));
    c->core_cap = cap;
}

/* Read /proc/stat into c->lines; *agg_ok tells whether the aggregate line
 * parsed. Returns the number of cpuN lines. */
static size_t read_stat(struct rt_cpu_collector *c, struct cpu_times *agg, bool *agg_ok)
{
    *agg_ok = false;
    ssize_t n = rt_readbuf_load(&c->stat, c->proc_fd, "stat");
    if (n < 0) {
        rt_log_once(&c->warned_read, LOG_WARNING, "cpu: cannot read /proc/stat: %s; CPU figures are 0",
                    strerror((int)-n));
        return 0;
    }
    size_t count = 0;
    char *cur = c->stat.data, *line;
    while ((line = rt_next_line(&cur))) {
        if (line[0] != 'c' || line[1] != 'p' || line[2] != 'u') {
            /* The cpu lines come first; skip the long intr line and the rest. */
            if (*agg_ok || count)
                break;
            continue;
        }
        const char *p = line + 3;
        if (*p == ' ') {
            *agg_ok = parse_times(p, agg);
            if (!*agg_ok)
                rt_log_once(&c->warned_line, LOG_WARNING, "cpu: unparsable line in /proc/stat: %.60s", line);
            continue;
        }
        uint64_t idx;
        char *end;
        if (*p < '0' || *p > '9')
            continue;
        idx = strtoull(p, &end, 10);
        if (*end != ' ' || idx > 1u << 20) {
            rt_log_once(&c->warned_line, LOG_WARNING, "cpu: unparsable line in /proc/stat: %.60s", line);
            continue;
        }
        if (count == c->lines_cap) {
            c->lines_cap = c->lines_cap ? c->lines_cap * 2 : 16;
            c->lines = rt_xrealloc(c->lines, c->lines_cap * sizeof(*c->lines));
        }
        struct cpu_line *l = &c->lines[count++];
        l->index = (unsigned)idx;
        l->ok = parse_times(end, &l->t);
        if (!l->ok)
            rt_log_once(&c->warned_line, LOG_WARNING, "cpu: unparsable line in /proc/stat: %.60s", line);
    }
    if (!*agg_ok && count == 0)
        rt_log_once(&c->warned_stat, LOG_WARNING, "cpu: no cpu lines in /proc/stat; CPU figures are 0");
    return count;
}

/* ---- process count ---- */

#define RT_DENTS_SIZE 32768

/* The entries straight from getdents64: readdir's call and lock per entry
 * cost more instructions than the counting (4.9k of a 124-process listing's
 * 6.7k). */
static uint32_t count_processes(struct rt_cpu_collector *c)
{
    if (c->proc_dir < 0 || lseek(c->proc_dir, 0, SEEK_SET) < 0)
        return 0;
    uint32_t n = 0;
    ssize_t len;
    while ((len = getdents64(c->proc_dir, c->dents, RT_DENTS_SIZE)) > 0)
        for (ssize_t off = 0; off < len;) {
            const struct dirent64 *e = (const struct dirent64 *)(const void *)(c->dents + off);
            off += e->d_reclen;
            n += e->d_name[0] >= '0' && e->d_name[0] <= '9' && rt_str_all_digits(e->d_name);
        }
    return n;
}

/* Listing /proc costs the kernel about 1 µs per process (1.2 ms with 1,000
 * processes, 8.5 ms with 5,000 on a 2-vCPU VM: more than the rest of a tick).
 * So the count is listed again only once PROC_COUNT_SPACING times the last
 * listing's duration has passed (≤ 0.05 % of a core), and then only if the
 * kernel's tasks changed (tasks_mark), at least every PROC_COUNT_MAX_AGE_NS;
 * in between the last count is reported. */
#define PROC_COUNT_SPACING 2000
#define PROC_COUNT_MAX_AGE_NS (30 * RT_NSEC_PER_SEC)

/* The text after the '/' of /proc/loadavg: the kernel's number of tasks and
 * the last PID it gave. Unchanged since the last listing, no process came
 * (it would have taken a new PID) and none went (the number would be lower),
 * so a listing would count the same. false when unknown (a fixture tree). */
static bool tasks_mark(struct rt_cpu_collector *c, char out[32])
{
    char buf[128];
    ssize_t n = rt_keptfile_read(&c->loadavg, c->proc_fd, "loadavg", buf, sizeof(buf));
    const char *slash = n > 0 ? strchr(buf, '/') : NULL;
    if (!slash || strlen(slash + 1) >= 32)
        return false;
    strcpy(out, slash + 1);
    return true;
}

static uint32_t process_count(struct rt_cpu_collector *c)
{
    uint64_t start = c->hooks.mono_ns(c->hooks.ctx);
    if (c->procs_valid && start < c->procs_next_ns)
        return c->procs;
    char tasks[32];
    bool marked = tasks_mark(c, tasks);
    if (c->procs_valid && marked && strcmp(tasks, c->listed_tasks) == 0 &&
        start - c->procs_listed_ns < PROC_COUNT_MAX_AGE_NS)
        return c->procs;
    c->procs = count_processes(c);
    c->procs_valid = true;
    c->procs_listed_ns = start;
    strcpy(c->listed_tasks, marked ? tasks : "");
    uint64_t end = c->hooks.mono_ns(c->hooks.ctx);
    uint64_t wait = rt_sat_sub(end, start) * PROC_COUNT_SPACING;
    c->procs_next_ns = end + (wait < PROC_COUNT_MAX_AGE_NS ? wait : PROC_COUNT_MAX_AGE_NS);
    return c->procs;
}

/* ---- cgroup ---- */

/* usage_usec from a cgroup v2 cpu.stat, in ns. */
static int read_v2_usage(struct rt_keptfile *k, int dirfd, const char *path, uint64_t *ns)
{
    char buf[1024];
    ssize_t n = rt_keptfile_read(k, dirfd, path, buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    char *cur = buf, *line;
    while ((line = rt_next_line(&cur))) {
        if (!rt_str_starts_with(line, "usage_usec "))
            continue;
        const char *p = line + 10;
        uint64_t us;
        if (!rt_scan_u64(&p, &us) || us > UINT64_MAX / 1000)
            return -EINVAL;
        *ns = us * 1000;
        return 0;
    }
    return -ENODATA;
}

static int read_cgroup_ns(struct rt_cpu_collector *c, uint64_t *ns)
{
    if (c->cg_kind == CG_V2)
        return read_v2_usage(&c->cg_file, c->sys_fd, c->cg_path, ns);
    char buf[64];
    ssize_t n = rt_keptfile_read(&c->cg_file, c->sys_fd, c->cg_path, buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    return rt_parse_u64(rt_trim(buf), ns) ? 0 : -EINVAL;
}

static const char *const v2_stats[] = {"fs/cgroup/cpu.stat", "fs/cgroup/unified/cpu.stat"};
static const char *const v2_max[] = {"fs/cgroup/cpu.max", "fs/cgroup/unified/cpu.max"};
static const char *const v1_usage[] = {"fs/cgroup/cpuacct/cpuacct.usage",
                                       "fs/cgroup/cpu,cpuacct/cpuacct.usage",
                                       "fs/cgroup/cpu/cpuacct.usage"};
static const char *const v1_dirs[] = {"fs/cgroup/cpu", "fs/cgroup/cpu,cpuacct", "fs/cgroup/cpuacct"};

/* v2 cpu.max "quota period" ("max" = none). */
static double read_v2_quota(int sys_fd, const char *path)
{
    char buf[128];
    if (rt_read_file_at(sys_fd, path, buf, sizeof(buf)) < 0)
        return 0;
    const char *p = buf;
    uint64_t quota, period;
    if (!rt_scan_u64(&p, &quota) || !rt_scan_u64(&p, &period) || quota == 0 || period == 0)
        return 0;
    return (double)quota / (double)period;
}

static double read_v1_quota(int sys_fd)
{
    for (size_t i = 0; i < RT_ARRAY_SIZE(v1_dirs); i++) {
        char qpath[96], ppath[96], buf[64];
        snprintf(qpath, sizeof(qpath), "%s/cpu.cfs_quota_us", v1_dirs[i]);
        snprintf(ppath, sizeof(ppath), "%s/cpu.cfs_period_us", v1_dirs[i]);
        int64_t quota;
        uint64_t period;
        if (rt_read_str_at(sys_fd, qpath, buf, sizeof(buf)) < 0 || !rt_parse_i64(buf, &quota) ||
            rt_read_u64_at(sys_fd, ppath, &period) < 0)
            continue;
        /* The first readable pair decides; -1 means unlimited. */
        return quota > 0 && period > 0 ? (double)quota / (double)period : 0;
    }
    return 0;
}

/* Chosen once: v2 cpu.stat at the root or under unified/ (hybrid hosts), else
 * the v1 cpuacct counters. */
static void pick_cgroup(struct rt_cpu_collector *c)
{
    uint64_t ns;
    for (size_t i = 0; i < RT_ARRAY_SIZE(v2_stats); i++) {
        rt_keptfile_close(&c->cg_file); /* it reads one path */
        c->cg_file.pseudo = -1;
        if (read_v2_usage(&c->cg_file, c->sys_fd, v2_stats[i], &ns) == 0) {
            c->cg_kind = CG_V2;
            c->cg_path = v2_stats[i];
            c->quota_cores = read_v2_quota(c->sys_fd, v2_max[i]);
            if (c->quota_cores == 0)
                c->quota_cores = read_v1_quota(c->sys_fd);
            return;
        }
    }
    rt_keptfile_close(&c->cg_file);
    for (size_t i = 0; i < RT_ARRAY_SIZE(v1_usage); i++)
        if (rt_read_u64_at(c->sys_fd, v1_usage[i], &ns) == 0) {
            c->cg_kind = CG_V1;
            c->cg_path = v1_usage[i];
            c->quota_cores = read_v1_quota(c->sys_fd);
            return;
        }
    c->cg_kind = CG_NONE;
}

/* ---- collect ---- */

static void collect(struct rt_cpu_collector *c, struct rt_cpu *out, struct rt_arena *arena)
{
    /* Same order as the reference: processes, /proc/stat, cgroup, then the
     * elapsed stamp once every read is done. */
    uint32_t procs = process_count(c);
    struct cpu_times agg = {0};
    bool agg_ok;
    size_t nlines = read_stat(c, &agg, &agg_ok);
    uint64_t cg_ns = 0;
    int cg_err = c->cg_kind == CG_NONE ? -ENOENT : read_cgroup_ns(c, &cg_ns);
    uint64_t now = c->hooks.mono_ns(c->hooks.ctx);
    double elapsed = (double)rt_sat_sub(now, c->mono_prev) / 1e9;
    if (elapsed < 0.001)
        elapsed = 0.001;
    c->mono_prev = now;
    c->elapsed_secs = elapsed;
    c->ncores = (unsigned)nlines;

    if (out) {
        memset(out, 0, sizeof(*out));
        out->process_count = procs;
        out->n_cores = nlines;
        out->per_core_pct = arena ? rt_arena_alloc(arena, (nlines ? nlines : 1) * sizeof(double)) : NULL;
    }

    /* Per core, matched to the previous read by cpu number (hotplug-safe). */
    for (size_t i = 0; i < nlines; i++) {
        struct cpu_line *l = &c->lines[i];
        ensure_core_cap(c, (size_t)l->index + 1);
        double pct = 0;
        if (l->ok && c->core_have_prev[l->index]) {
            const struct cpu_times *p = &c->core_prev[l->index];
            uint64_t dt = rt_sat_sub(l->t.total, p->total);
            uint64_t busy = rt_sat_sub(dt, rt_sat_sub(l->t.idle, p->idle));
            if (dt)
                pct = (double)busy / (double)dt * 100.0;
            pct = pct < 0 ? 0 : pct > 100 ? 100 : pct;
        }
        if (out && out->per_core_pct)
            out->per_core_pct[i] = pct;
        c->core_have_prev[l->index] = l->ok;
        if (l->ok)
            c->core_prev[l->index] = l->t;
    }

    c->busy_valid = false;
    if (agg_ok && c->agg_have_prev) {
        const struct cpu_times *p = &c->agg_prev;
        uint64_t dt = rt_sat_sub(agg.total, p->total);
        uint64_t busy = rt_sat_sub(dt, rt_sat_sub(agg.idle, p->idle));
        if (dt) {
            c->busy_valid = true;
            c->busy_secs = (double)busy / c->clk_tck;
        }
        if (out) {
            out->utilization_pct = dt ? (double)busy / (double)dt * (double)nlines : 0;
            out->utime_secs = (double)rt_sat_sub(agg.user_nice, p->user_nice) / c->clk_tck;
            out->stime_secs = (double)rt_sat_sub(agg.system, p->system) / c->clk_tck;
        }
    }
    c->agg_have_prev = agg_ok;
    if (agg_ok)
        c->agg_prev = agg;

    if (cg_err < 0 && c->cg_kind != CG_NONE)
        rt_log_once(&c->warned_cgroup, LOG_WARNING, "cpu: cannot read cgroup counter %s: %s",
                    c->cg_path, strerror(-cg_err));
    if (out && cg_err == 0) {
        out->has_cgroup = true;
        if (c->cg_have_prev) {
            double secs = (double)rt_sat_sub(cg_ns, c->cg_prev_ns) / 1e9;
            double cores = secs / elapsed, cap = rt_cpu_collector_effective_cores(c);
            out->cgroup_usage_secs = secs;
            out->cgroup_utilization_pct = cap > 0 && cores > cap ? cap : cores;
        }
    }
    c->cg_have_prev = cg_err == 0;
    c->cg_prev_ns = cg_ns;
}

struct rt_cpu_collector *rt_cpu_collector_new_hooks(const struct rt_roots *r,
                                                    const struct rt_collect_hooks *hooks)
{
    struct rt_cpu_collector *c = rt_xcalloc(1, sizeof(*c));
    c->proc_fd = r->proc_fd;
    c->sys_fd = r->sys_fd;
    rt_collect_hooks_resolve(&c->hooks, hooks);
    rt_readbuf_init(&c->stat, 8192);
    c->stat.file.whole = true;
    c->cg_file = (struct rt_keptfile)RT_KEPTFILE_WHOLE;
    c->loadavg = (struct rt_keptfile)RT_KEPTFILE_WHOLE;
    long tck = sysconf(_SC_CLK_TCK);
    c->clk_tck = tck > 0 ? (double)tck : 100.0;
    c->proc_dir = openat(r->proc_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    c->dents = rt_xmalloc(RT_DENTS_SIZE);
    if (c->proc_dir < 0)
        rt_log_once(&c->warned_procdir, LOG_WARNING, "cpu: cannot list %s: %s; process_count is 0",
                    r->proc, strerror(errno));
    pick_cgroup(c);
    c->mono_prev = c->hooks.mono_ns(c->hooks.ctx);
    collect(c, NULL, NULL); /* baseline */
    return c;
}

struct rt_cpu_collector *rt_cpu_collector_new(const struct rt_roots *r)
{
    return rt_cpu_collector_new_hooks(r, NULL);
}

void rt_cpu_collect(struct rt_cpu_collector *c, struct rt_sample *s)
{
    collect(c, &s->cpu, &s->arena);
}

void rt_cpu_collector_free(struct rt_cpu_collector *c)
{
    if (!c)
        return;
    if (c->proc_dir >= 0)
        close(c->proc_dir);
    free(c->dents);
    rt_readbuf_free(&c->stat);
    rt_keptfile_close(&c->cg_file);
    rt_keptfile_close(&c->loadavg);
    free(c->lines);
    free(c->core_prev);
    free(c->core_have_prev);
    free(c);
}

unsigned rt_cpu_collector_ncores(const struct rt_cpu_collector *c)
{
    return c->ncores;
}

bool rt_cpu_collector_busy_secs(const struct rt_cpu_collector *c, double *busy_secs)
{
    if (c->busy_valid)
        *busy_secs = c->busy_secs;
    return c->busy_valid;
}

double rt_cpu_collector_elapsed_secs(const struct rt_cpu_collector *c)
{
    return c->elapsed_secs;
}

double rt_cpu_collector_effective_cores(const struct rt_cpu_collector *c)
{
    double n = (double)c->ncores;
    if (c->quota_cores > 0 && (n == 0 || c->quota_cores < n))
        return c->quota_cores;
    return n;
}
