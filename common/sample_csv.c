#include "rt/sample_csv.h"

#include "rt/util.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char RT_CSV_HEADER[] =
    "timestamp,system_processes,system_utime,system_stime,system_cpu_usage,"
    "system_memory_free_mib,system_memory_used_mib,system_memory_buffers_mib,"
    "system_memory_cached_mib,system_memory_active_mib,system_memory_inactive_mib,"
    "system_disk_read_bytes,system_disk_write_bytes,system_disk_space_total_gb,"
    "system_disk_space_used_gb,system_disk_space_free_gb,system_net_recv_bytes,"
    "system_net_sent_bytes,system_gpu_usage,system_gpu_vram_mib,system_gpu_utilized,"
    "process_pid,process_children,process_utime,process_stime,process_cpu_usage,"
    "process_memory_mib,process_disk_read_bytes,process_disk_write_bytes,"
    "process_gpu_usage,process_gpu_vram_mib,process_gpu_utilized";

struct out {
    char *buf;
    size_t size, len;
};

static void put_mem(struct out *o, const char *s, size_t n)
{
    if (o->len + n < o->size) { /* room for it and the NUL the row ends with */
        memcpy(o->buf + o->len, s, n);
        o->len += n;
        return;
    }
    if (o->len < o->size) {
        size_t room = o->size - o->len - 1;
        memcpy(o->buf + o->len, s, n < room ? n : room);
        o->buf[o->len + (n < room ? n : room)] = '\0';
    }
    o->len += n;
}

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof(tmp)) {
        put_mem(o, tmp, (size_t)n);
        return;
    }
    va_start(ap, fmt); /* longer than any field: the slow way */
    char *big = NULL;
    n = vasprintf(&big, fmt, ap);
    va_end(ap);
    if (n > 0)
        put_mem(o, big, (size_t)n);
    free(big);
}

static void put_u64(struct out *o, uint64_t v)
{
    char tmp[20];
    put_mem(o, tmp, rt_fmt_u64(tmp, v));
}

static void put_c(struct out *o, char c)
{
    put_mem(o, &c, 1);
}

/* printf("%.*f", d, v), d <= 6, by integers: the fraction (exact: v minus its
 * integer part) times 10^d is within 1e-9 of its true value, so rounding it
 * gives printf's digits unless it lies near a tie, which printf decides on
 * the exact binary value; those, and large or odd values, go to printf. */
static void put_fixed(struct out *o, double v, int d)
{
    static const double pow10[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6};
    double a = fabs(v);
    if (d >= 0 && d <= 6 && a < 1e15) {
        /* floor() by truncation: both are whole and not negative */
        double ip = (double)(uint64_t)a;
        double m = (a - ip) * pow10[d];
        double r = (double)(uint64_t)m;
        if (fabs(m - r - 0.5) > 1e-6) {
            uint64_t whole = (uint64_t)ip, frac = (uint64_t)r + (m - r > 0.5);
            if (frac >= (uint64_t)pow10[d]) {
                frac -= (uint64_t)pow10[d];
                whole++;
            }
            if (signbit(v))
                put_c(o, '-');
            put_u64(o, whole);
            if (d) {
                char digits[8];
                for (int i = d - 1; i >= 0; i--, frac /= 10)
                    digits[i] = (char)('0' + frac % 10);
                put_c(o, '.');
                put_mem(o, digits, (size_t)d);
            }
            return;
        }
    }
    put(o, "%.*f", d, v);
}

static void push(struct rt_csv_host *h, double v)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 64;
        h->v = rt_xrealloc(h->v, h->cap * sizeof(*h->v));
    }
    h->v[h->n++] = v;
}

void rt_csv_host_from_sample(const struct rt_sample *s, struct rt_csv_host *h)
{
    const struct rt_memory *m = &s->memory;
    h->n = 0;
    push(h, s->cpu.process_count);
    push(h, s->cpu.utime_secs);
    push(h, s->cpu.stime_secs);
    push(h, s->cpu.utilization_pct);
    const uint64_t mem[] = {m->free_mib, m->used_mib, m->buffers_mib, m->cached_mib, m->active_mib, m->inactive_mib};
    for (size_t i = 0; i < RT_ARRAY_SIZE(mem); i++)
        push(h, (double)mem[i]);
    push(h, (double)s->n_disks);
    for (size_t i = 0; i < s->n_disks; i++) {
        const struct rt_disk *d = &s->disks[i];
        push(h, d->stacked);
        push(h, d->read_bytes_per_sec);
        push(h, d->write_bytes_per_sec);
        push(h, (double)d->n_mounts);
        for (size_t k = 0; k < d->n_mounts; k++) {
            push(h, (double)d->mounts[k].total_bytes);
            push(h, (double)d->mounts[k].used_bytes);
            push(h, (double)d->mounts[k].available_bytes);
        }
    }
    push(h, (double)s->n_nets);
    for (size_t i = 0; i < s->n_nets; i++) {
        push(h, s->nets[i].rx_bytes_per_sec);
        push(h, s->nets[i].tx_bytes_per_sec);
    }
    push(h, (double)s->n_gpus);
    for (size_t i = 0; i < s->n_gpus; i++) {
        push(h, s->gpus[i].utilization_pct);
        push(h, (double)s->gpus[i].vram_used_bytes);
    }
}

void rt_csv_host_free(struct rt_csv_host *h)
{
    free(h->v);
    memset(h, 0, sizeof(*h));
}

struct cursor {
    const double *v;
    size_t n, i;
    bool bad;
};

static double next(struct cursor *c)
{
    if (c->i >= c->n) {
        c->bad = true;
        return 0;
    }
    return c->v[c->i++];
}

/* A count in the list: a small whole number. */
static size_t next_count(struct cursor *c)
{
    double v = next(c);
    if (!(v >= 0 && v <= 1e6 && v == floor(v))) {
        c->bad = true;
        return 0;
    }
    return (size_t)v;
}

/* Which figure (rt_fig_samples) each CSV column shows, or -1. */
static int col[RT_CSV_COLUMNS + 1];
static pthread_once_t col_once = PTHREAD_ONCE_INIT;

static void col_build(void)
{
    for (size_t k = 0; k <= RT_CSV_COLUMNS; k++)
        col[k] = -1;
    for (size_t i = 0; i < rt_fig_nsamples; i++)
        if (rt_fig_samples[i].csv)
            col[rt_fig_samples[i].csv] = (int)i;
}

/* A job's figure in its CSV column: as the sample shows it, to 4 places
 * where it has decimals. */
static void put_figure(struct out *o, const struct rt_fig_sample *r, double v)
{
    switch (r->show) {
    case RT_SHOW_INT: put_u64(o, rt_fig_u64(v)); break;
    case RT_SHOW_DEC: put_fixed(o, rt_round_dec(v, r->decimals), 4); break;
    case RT_SHOW_MIB: put_u64(o, rt_fig_u64(v) / RT_MIB); break;
    case RT_SHOW_MIB_DEC: put_fixed(o, rt_round_dec(v / (double)RT_MIB, r->decimals), 4); break;
    }
}

size_t rt_csv_row(const double *h, size_t n, uint64_t timestamp_ms, double secs, const struct rt_csv_job *job,
                  char *buf, size_t size)
{
    struct cursor c = {h, n, 0, false};
    double procs = next(&c), utime = next(&c), stime = next(&c), util = next(&c), mem[6];
    for (size_t i = 0; i < 6; i++)
        mem[i] = next(&c);
    uint64_t disk_r = 0, disk_w = 0, net_r = 0, net_s = 0;
    double space_total = 0, space_used = 0, space_free = 0;
    for (size_t i = 0, nd = next_count(&c); i < nd && !c.bad; i++) {
        bool stacked = next(&c) != 0;
        double r = next(&c), w = next(&c);
        if (!stacked) { /* built on other devices: their I/O is counted there */
            disk_r += rt_sample_bytes_in(r, secs);
            disk_w += rt_sample_bytes_in(w, secs);
        }
        for (size_t k = 0, nm = next_count(&c); k < nm && !c.bad; k++) {
            space_total += next(&c) / 1e9;
            space_used += next(&c) / 1e9; /* as df's Used: the root-reserved blocks are not in use */
            space_free += next(&c) / 1e9;
        }
    }
    for (size_t i = 0, nn = next_count(&c); i < nn && !c.bad; i++) {
        net_r += rt_sample_bytes_in(next(&c), secs);
        net_s += rt_sample_bytes_in(next(&c), secs);
    }
    double gpu_usage = 0, gpu_vram = 0;
    unsigned gpu_busy = 0;
    for (size_t i = 0, ng = next_count(&c); i < ng && !c.bad; i++) {
        double u = rt_round_dec(next(&c), RT_DEC_PCT);
        gpu_usage += u / 100.0;
        gpu_vram += next(&c) / (double)RT_MIB;
        gpu_busy += u > 0;
    }
    bool bytes_ok = true; /* a damaged store may hold any double */
    for (size_t i = 0; i < 6; i++)
        bytes_ok &= mem[i] >= 0 && mem[i] < 0x1p64;
    if (c.bad || c.i != n || !bytes_ok || !(procs >= 0 && procs <= UINT32_MAX))
        return 0;

    /* Values rounded as the JSON writer rounds them (see RT_DEC_*). */
    struct out o = {buf, size, 0};
    if (size)
        buf[0] = '\0';
    /* Seconds with milliseconds, as the Python tracker writes them (3 dp):
     * samples less than a second apart keep distinct timestamps. */
    put_u64(&o, timestamp_ms / 1000);
    char ms[5] = {'.', (char)('0' + timestamp_ms / 100 % 10), (char)('0' + timestamp_ms / 10 % 10),
                  (char)('0' + timestamp_ms % 10), ','};
    put_mem(&o, ms, sizeof(ms));
    put_u64(&o, (uint32_t)procs);
    put_c(&o, ',');
    /* CPU seconds of the host's interval: once per interval in a job's rows
     * (a final sample right after its tick's has no interval of its own). */
    if (!job->host_repeated)
        put_fixed(&o, rt_round_dec(utime, RT_DEC_SECS), 3);
    put_c(&o, ',');
    if (!job->host_repeated)
        put_fixed(&o, rt_round_dec(stime, RT_DEC_SECS), 3);
    put_c(&o, ',');
    put_fixed(&o, rt_round_dec(util, RT_DEC_CORES), 4);
    for (size_t i = 0; i < 6; i++) {
        put_c(&o, ',');
        put_u64(&o, (uint64_t)mem[i]);
    }
    const uint64_t io[] = {disk_r, disk_w};
    for (size_t i = 0; i < 2; i++) {
        put_c(&o, ',');
        put_u64(&o, io[i]);
    }
    const double space[] = {space_total, space_used, space_free};
    for (size_t i = 0; i < 3; i++) {
        put_c(&o, ',');
        put_fixed(&o, space[i], 6);
    }
    const uint64_t net[] = {net_r, net_s};
    for (size_t i = 0; i < 2; i++) {
        put_c(&o, ',');
        put_u64(&o, net[i]);
    }
    put_c(&o, ',');
    put_fixed(&o, gpu_usage, 4);
    put_c(&o, ',');
    put_fixed(&o, gpu_vram, 4);
    put_c(&o, ',');
    put_u64(&o, gpu_busy);
    put_c(&o, ',');
    if (job->has_job && job->pid < 0)
        put_c(&o, '-');
    if (job->has_job)
        put_u64(&o, (uint64_t)llabs((long long)job->pid));
    /* The job's columns; on host samples the GPU ones are the host's GPU
     * use, as the Rust tracker writes them without a PID, and the others
     * empty. */
    pthread_once(&col_once, col_build);
    for (size_t k = RT_CSV_PID_COLUMN + 1; k <= RT_CSV_COLUMNS; k++) {
        put_c(&o, ',');
        double v;
        if (col[k] >= 0 && rt_fig_sample_in(job->f, job->has_job, (size_t)col[k], &v))
            put_figure(&o, &rt_fig_samples[col[k]], v);
    }
    put_c(&o, '\n');
    if (o.len < size)
        buf[o.len] = '\0'; /* else put_mem ended it where it cut */
    return o.len;
}

size_t rt_sample_to_csv(const struct rt_sample *s, char *buf, size_t size)
{
    struct rt_csv_host h = {0};
    rt_csv_host_from_sample(s, &h);
    struct rt_csv_job job = {.has_job = s->has_job, .pid = s->tracked_pid, .f = &s->job,
                             .host_repeated = s->has_job && s->host_repeated};
    size_t n = rt_csv_row(h.v, h.n, s->timestamp_ms, rt_sample_interval_secs(s), &job, buf, size);
    rt_csv_host_free(&h);
    return n;
}
