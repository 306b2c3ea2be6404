#include "rt/sample_json.h"

#include "rt/json.h"
#include "rt/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEC_CORES RT_DEC_CORES
#define DEC_PCT RT_DEC_PCT
#define DEC_SECS RT_DEC_SECS
#define DEC_RATE RT_DEC_RATE
#define DEC_MIB RT_DEC_MIB
#define DEC_WATTS RT_DEC_WATTS

static void add(struct json_object *o, const char *k, struct json_object *v)
{
    json_object_object_add(o, k, v);
}

/* ---- the text ----
 * Written straight into a buffer (a tick's host sample builds no tree): the
 * bytes json-c writes for the same object with RT_VL_JSON_FLAGS, keys
 * sorted at every level, which rt_sample_to_json's tree reads back as they
 * are (json-c keeps a parsed number's text). */

struct jw {
    struct printbuf *pb;
    bool first; /* no value yet in the innermost object or array */
};

static void put(struct jw *w, const char *s, size_t n)
{
    printbuf_memappend_fast(w->pb, s, (int)n);
}

static void sep(struct jw *w)
{
    if (!w->first)
        put(w, ",", 1);
    w->first = false;
}

/* As json-c escapes a string ('/' left alone). */
static void str(struct jw *w, const char *s)
{
    rt_json_put_string(w->pb, s, strlen(s));
}

/* A key of the sample's own (plain ASCII: nothing to escape). */
static void key(struct jw *w, const char *k)
{
    sep(w);
    put(w, "\"", 1);
    put(w, k, strlen(k));
    put(w, "\":", 2);
}

/* A key from elsewhere (a GPU detail's). */
static void key_escaped(struct jw *w, const char *k)
{
    sep(w);
    str(w, k);
    put(w, ":", 1);
}

static void open_(struct jw *w, char c)
{
    put(w, &c, 1);
    w->first = true;
}

static void close_(struct jw *w, char c)
{
    put(w, &c, 1);
    w->first = false;
}

static void null_(struct jw *w)
{
    put(w, "null", 4);
}

static void u64_(struct jw *w, uint64_t v)
{
    char b[24];
    put(w, b, rt_fmt_u64(b, v));
}

static void i64_(struct jw *w, int64_t v)
{
    if (v < 0)
        put(w, "-", 1);
    u64_(w, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

static void dbl(struct jw *w, double v, int decimals)
{
    char b[RT_JSON_DOUBLE_MAX];
    size_t n = rt_json_format_double(v, decimals, b);
    if (n)
        put(w, b, n);
    else
        null_(w);
}

static void str_or_null(struct jw *w, const char *s)
{
    if (s)
        str(w, s);
    else
        null_(w);
}

/* key with a value of each kind */
static void k_u64(struct jw *w, const char *k, uint64_t v)
{
    key(w, k);
    u64_(w, v);
}

static void k_dbl(struct jw *w, const char *k, double v, int decimals)
{
    key(w, k);
    dbl(w, v, decimals);
}

static void k_str(struct jw *w, const char *k, const char *s)
{
    key(w, k);
    str_or_null(w, s);
}

static void k_null(struct jw *w, const char *k)
{
    key(w, k);
    null_(w);
}

static void k_opt_i64(struct jw *w, const char *k, bool has, int64_t v)
{
    key(w, k);
    if (has)
        i64_(w, v);
    else
        null_(w);
}

static void cpu_text(struct jw *w, const struct rt_sample *s)
{
    const struct rt_cpu *c = &s->cpu;
    key(w, "cpu");
    open_(w, '{');
    key(w, "cgroup_usage_secs");
    c->has_cgroup ? dbl(w, c->cgroup_usage_secs, DEC_SECS) : null_(w);
    key(w, "cgroup_utilization_pct");
    c->has_cgroup ? dbl(w, c->cgroup_utilization_pct, DEC_CORES) : null_(w);
    key(w, "per_core_pct");
    open_(w, '[');
    for (size_t i = 0; i < c->n_cores; i++) {
        sep(w);
        dbl(w, c->per_core_pct[i], DEC_PCT);
    }
    close_(w, ']');
    /* The job's keys (null on host samples) around process_count, sorted
     * as rt_fig_samples is. */
    bool count_put = false;
    for (size_t i = 0; i < rt_fig_nsamples; i++) {
        const struct rt_fig_sample *r = &rt_fig_samples[i];
        if (!r->json)
            continue;
        if (!count_put && strcmp(r->json, "process_count") > 0) {
            k_u64(w, "process_count", c->process_count);
            count_put = true;
        }
        key(w, r->json);
        double v;
        char b[64];
        size_t n = rt_fig_sample_in(&s->job, s->has_job, i, &v) ? rt_fig_sample_text(r, v, b) : 0;
        if (n)
            put(w, b, n);
        else
            null_(w);
    }
    k_dbl(w, "stime_secs", c->stime_secs, DEC_SECS);
    k_dbl(w, "utilization_pct", c->utilization_pct, DEC_CORES);
    k_dbl(w, "utime_secs", c->utime_secs, DEC_SECS);
    close_(w, '}');
}

static void memory_text(struct jw *w, const struct rt_memory *m)
{
    key(w, "memory");
    open_(w, '{');
    k_u64(w, "active_mib", m->active_mib);
    k_u64(w, "available_mib", m->available_mib);
    k_u64(w, "buffers_mib", m->buffers_mib);
    k_u64(w, "cached_mib", m->cached_mib);
    k_u64(w, "free_mib", m->free_mib);
    k_u64(w, "inactive_mib", m->inactive_mib);
    k_u64(w, "swap_total_mib", m->swap_total_mib);
    k_u64(w, "swap_used_mib", m->swap_used_mib);
    k_dbl(w, "swap_used_pct", m->swap_used_pct, DEC_PCT);
    k_u64(w, "total_mib", m->total_mib);
    k_u64(w, "used_mib", m->used_mib);
    k_dbl(w, "used_pct", m->used_pct, DEC_PCT);
    close_(w, '}');
}

static void disk_text(struct jw *w, const struct rt_disk *d)
{
    sep(w);
    open_(w, '{');
    key(w, "capacity_bytes");
    d->has_capacity ? u64_(w, d->capacity_bytes) : null_(w);
    k_str(w, "device", d->device ? d->device : "");
    k_str(w, "device_type", d->device_type);
    k_str(w, "model", d->model);
    key(w, "mounts");
    open_(w, '[');
    for (size_t i = 0; i < d->n_mounts; i++) {
        const struct rt_mount *m = &d->mounts[i];
        sep(w);
        open_(w, '{');
        k_u64(w, "available_bytes", m->available_bytes);
        k_str(w, "filesystem", m->filesystem ? m->filesystem : "");
        k_str(w, "mount_point", m->mount_point ? m->mount_point : "");
        k_u64(w, "total_bytes", m->total_bytes);
        k_u64(w, "used_bytes", m->used_bytes);
        k_dbl(w, "used_pct", m->used_pct, DEC_PCT);
        close_(w, '}');
    }
    close_(w, ']');
    k_dbl(w, "read_bytes_per_sec", d->read_bytes_per_sec, DEC_RATE);
    k_u64(w, "read_bytes_total", d->read_bytes_total);
    k_str(w, "serial", d->serial);
    key(w, "stacked");
    d->stacked ? put(w, "true", 4) : put(w, "false", 5);
    k_str(w, "vendor", d->vendor);
    k_dbl(w, "write_bytes_per_sec", d->write_bytes_per_sec, DEC_RATE);
    k_u64(w, "write_bytes_total", d->write_bytes_total);
    close_(w, '}');
}

static void net_text(struct jw *w, const struct rt_netif *n)
{
    sep(w);
    open_(w, '{');
    k_str(w, "driver", n->driver);
    k_str(w, "interface", n->interface ? n->interface : "");
    k_str(w, "mac_address", n->mac_address);
    k_opt_i64(w, "mtu", n->has_mtu, n->mtu);
    k_str(w, "operstate", n->operstate);
    k_dbl(w, "rx_bytes_per_sec", n->rx_bytes_per_sec, DEC_RATE);
    k_u64(w, "rx_bytes_total", n->rx_bytes_total);
    k_opt_i64(w, "speed_mbps", n->has_speed, n->speed_mbps);
    k_dbl(w, "tx_bytes_per_sec", n->tx_bytes_per_sec, DEC_RATE);
    k_u64(w, "tx_bytes_total", n->tx_bytes_total);
    close_(w, '}');
}

static void gpu_text(struct jw *w, const struct rt_gpu *g)
{
    sep(w);
    open_(w, '{');
    k_null(w, "core_count");
    key(w, "detail");
    open_(w, '{');
    /* A key given twice keeps its first place and its last value. */
    for (size_t i = 0; i < g->n_detail; i++) {
        size_t last = i;
        bool seen = false;
        for (size_t j = 0; j < g->n_detail; j++) {
            if (strcmp(g->detail[j].key, g->detail[i].key) != 0)
                continue;
            seen |= j < i;
            last = j;
        }
        if (!seen) {
            key_escaped(w, g->detail[i].key);
            str(w, g->detail[last].value ? g->detail[last].value : "");
        }
    }
    close_(w, '}');
    k_str(w, "device_type", "GPU");
    key(w, "energy_joules");
    g->has_energy ? dbl(w, g->energy_joules, 3) : null_(w);
    k_opt_i64(w, "frequency_mhz", g->has_frequency, g->frequency_mhz);
    k_str(w, "host_id", g->host_id ? g->host_id : "");
    k_str(w, "name", g->name ? g->name : "");
    key(w, "power_watts");
    g->has_power ? dbl(w, g->power_watts, DEC_WATTS) : null_(w);
    k_opt_i64(w, "temperature_celsius", g->has_temperature, g->temperature_celsius);
    k_dbl(w, "utilization_pct", g->utilization_pct, DEC_PCT);
    k_str(w, "uuid", g->uuid ? g->uuid : "");
    k_str(w, "vendor", g->vendor);
    k_u64(w, "vram_total_bytes", g->vram_total_bytes);
    k_u64(w, "vram_used_bytes", g->vram_used_bytes);
    k_dbl(w, "vram_used_pct", g->vram_used_pct, DEC_PCT);
    close_(w, '}');
}

void rt_sample_json_text(const struct rt_sample *s, struct printbuf *pb)
{
    struct jw w = {pb, true};
    open_(&w, '{');
    if (s->has_interval)
        k_u64(&w, "actual_interval_ms", s->actual_interval_ms);
    cpu_text(&w, s);
    key(&w, "disk");
    open_(&w, '[');
    for (size_t i = 0; i < s->n_disks; i++)
        disk_text(&w, &s->disks[i]);
    close_(&w, ']');
    key(&w, "gpu");
    open_(&w, '[');
    for (size_t i = 0; i < s->n_gpus; i++)
        gpu_text(&w, &s->gpus[i]);
    close_(&w, ']');
    key(&w, "host_timestamp_ms");
    s->has_job && s->host_timestamp_ms ? u64_(&w, s->host_timestamp_ms) : null_(&w);
    key(&w, "job_id");
    s->job_id ? u64_(&w, s->job_id) : null_(&w);
    k_str(&w, "job_name", s->job_name);
    memory_text(&w, &s->memory);
    key(&w, "network");
    open_(&w, '[');
    for (size_t i = 0; i < s->n_nets; i++)
        net_text(&w, &s->nets[i]);
    close_(&w, ']');
    k_str(&w, RT_SAMPLE_VERSION_KEY, RT_VERSION);
    k_u64(&w, "timestamp_ms", s->timestamp_ms);
    k_u64(&w, "timestamp_secs", s->timestamp_secs);
    k_opt_i64(&w, "tracked_pid", s->has_job, s->tracked_pid);
    close_(&w, '}');
}

struct json_object *rt_sample_to_json(const struct rt_sample *s)
{
    struct printbuf *pb = printbuf_new();
    if (!pb)
        abort();
    rt_sample_json_text(s, pb);
    struct json_object *o = json_tokener_parse(pb->buf);
    printbuf_free(pb);
    if (!o)
        abort(); /* the writer's own text */
    return o;
}

void rt_sample_json_set_job(struct json_object *root, const struct rt_sample *s)
{
    add(root, "host_timestamp_ms", s->has_job && s->host_timestamp_ms ? rt_json_u64(s->host_timestamp_ms) : NULL);
    add(root, "job_id", s->job_id ? rt_json_u64(s->job_id) : NULL);
    add(root, "job_name", rt_json_string_or_null(s->job_name));
    add(root, "tracked_pid", s->has_job ? json_object_new_int64(s->tracked_pid) : NULL);
    struct json_object *c = rt_json_get_object(root, "cpu");
    if (!c)
        return;
    for (size_t i = 0; i < rt_fig_nsamples; i++) {
        double v;
        if (rt_fig_samples[i].json)
            add(c, rt_fig_samples[i].json,
                rt_fig_sample_in(&s->job, s->has_job, i, &v) ? rt_fig_sample_json(&rt_fig_samples[i], v) : NULL);
    }
}

/* ---- parsing ---- */

static const char *dup_str(struct rt_sample *s, struct json_object *o, const char *key)
{
    return rt_arena_strdup(&s->arena, rt_json_get_string(o, key));
}

static uint64_t u64_or0(struct json_object *o, const char *key)
{
    uint64_t v = 0;
    rt_json_get_u64(o, key, &v);
    return v;
}

static double dbl_or0(struct json_object *o, const char *key)
{
    double v = 0;
    rt_json_get_double(o, key, &v);
    return v;
}

static size_t arr_len(struct json_object *a)
{
    return a ? json_object_array_length(a) : 0;
}

static void parse_cpu(struct json_object *c, struct rt_sample *s)
{
    struct rt_cpu *cpu = &s->cpu;
    cpu->utilization_pct = dbl_or0(c, "utilization_pct");
    cpu->utime_secs = dbl_or0(c, "utime_secs");
    cpu->stime_secs = dbl_or0(c, "stime_secs");
    cpu->process_count = (uint32_t)u64_or0(c, "process_count");
    cpu->has_cgroup = rt_json_get_double(c, "cgroup_usage_secs", &cpu->cgroup_usage_secs);
    rt_json_get_double(c, "cgroup_utilization_pct", &cpu->cgroup_utilization_pct);
    struct json_object *cores = rt_json_get_array(c, "per_core_pct");
    cpu->n_cores = arr_len(cores);
    cpu->per_core_pct = rt_arena_alloc(&s->arena, cpu->n_cores * sizeof(double));
    for (size_t i = 0; i < cpu->n_cores; i++)
        cpu->per_core_pct[i] = json_object_get_double(json_object_array_get_idx(cores, i));
    s->has_job = rt_job_figures_from_json(c, &s->job);
}

static void parse_memory(struct json_object *m, struct rt_memory *mem)
{
    mem->total_mib = u64_or0(m, "total_mib");
    mem->free_mib = u64_or0(m, "free_mib");
    mem->available_mib = u64_or0(m, "available_mib");
    mem->used_mib = u64_or0(m, "used_mib");
    mem->used_pct = dbl_or0(m, "used_pct");
    mem->buffers_mib = u64_or0(m, "buffers_mib");
    mem->cached_mib = u64_or0(m, "cached_mib");
    mem->swap_total_mib = u64_or0(m, "swap_total_mib");
    mem->swap_used_mib = u64_or0(m, "swap_used_mib");
    mem->swap_used_pct = dbl_or0(m, "swap_used_pct");
    mem->active_mib = u64_or0(m, "active_mib");
    mem->inactive_mib = u64_or0(m, "inactive_mib");
}

static void parse_disk(struct json_object *o, struct rt_disk *d, struct rt_sample *s)
{
    d->device = dup_str(s, o, "device");
    d->model = dup_str(s, o, "model");
    d->vendor = dup_str(s, o, "vendor");
    d->serial = dup_str(s, o, "serial");
    d->device_type = dup_str(s, o, "device_type");
    d->has_capacity = rt_json_get_u64(o, "capacity_bytes", &d->capacity_bytes);
    rt_json_get_bool(o, "stacked", &d->stacked);
    d->read_bytes_per_sec = dbl_or0(o, "read_bytes_per_sec");
    d->write_bytes_per_sec = dbl_or0(o, "write_bytes_per_sec");
    d->read_bytes_total = u64_or0(o, "read_bytes_total");
    d->write_bytes_total = u64_or0(o, "write_bytes_total");
    struct json_object *mounts = rt_json_get_array(o, "mounts");
    d->n_mounts = arr_len(mounts);
    d->mounts = rt_arena_alloc(&s->arena, d->n_mounts * sizeof(*d->mounts));
    for (size_t i = 0; i < d->n_mounts; i++) {
        struct json_object *mo = json_object_array_get_idx(mounts, i);
        struct rt_mount *m = &d->mounts[i];
        m->mount_point = dup_str(s, mo, "mount_point");
        m->filesystem = dup_str(s, mo, "filesystem");
        m->total_bytes = u64_or0(mo, "total_bytes");
        m->used_bytes = u64_or0(mo, "used_bytes");
        m->available_bytes = u64_or0(mo, "available_bytes");
        m->used_pct = dbl_or0(mo, "used_pct");
    }
}

static void parse_net(struct json_object *o, struct rt_netif *n, struct rt_sample *s)
{
    n->interface = dup_str(s, o, "interface");
    n->mac_address = dup_str(s, o, "mac_address");
    n->driver = dup_str(s, o, "driver");
    n->operstate = dup_str(s, o, "operstate");
    n->has_speed = rt_json_get_i64(o, "speed_mbps", &n->speed_mbps);
    uint64_t mtu;
    n->has_mtu = rt_json_get_u64(o, "mtu", &mtu);
    n->mtu = (uint32_t)mtu;
    n->rx_bytes_per_sec = dbl_or0(o, "rx_bytes_per_sec");
    n->tx_bytes_per_sec = dbl_or0(o, "tx_bytes_per_sec");
    n->rx_bytes_total = u64_or0(o, "rx_bytes_total");
    n->tx_bytes_total = u64_or0(o, "tx_bytes_total");
}

static void parse_gpu(struct json_object *o, struct rt_gpu *g, struct rt_sample *s)
{
    g->uuid = dup_str(s, o, "uuid");
    g->name = dup_str(s, o, "name");
    g->host_id = dup_str(s, o, "host_id");
    g->vendor = dup_str(s, o, "vendor");
    struct json_object *detail = rt_json_get_object(o, "detail");
    if (detail) {
        g->n_detail = (size_t)json_object_object_length(detail);
        g->detail = rt_arena_alloc(&s->arena, g->n_detail * sizeof(*g->detail));
        size_t i = 0;
        json_object_object_foreach(detail, k, v) {
            g->detail[i].key = rt_arena_strdup(&s->arena, k);
            g->detail[i].value = rt_arena_strdup(&s->arena, json_object_get_string(v));
            i++;
        }
    }
    g->utilization_pct = dbl_or0(o, "utilization_pct");
    g->vram_total_bytes = u64_or0(o, "vram_total_bytes");
    g->vram_used_bytes = u64_or0(o, "vram_used_bytes");
    g->vram_used_pct = dbl_or0(o, "vram_used_pct");
    uint64_t v;
    if ((g->has_temperature = rt_json_get_u64(o, "temperature_celsius", &v)))
        g->temperature_celsius = (uint32_t)v;
    g->has_power = rt_json_get_double(o, "power_watts", &g->power_watts);
    if ((g->has_frequency = rt_json_get_u64(o, "frequency_mhz", &v)))
        g->frequency_mhz = (uint32_t)v;
    g->has_energy = rt_json_get_double(o, "energy_joules", &g->energy_joules);
}

int rt_sample_from_json(struct json_object *o, struct rt_sample *s, char *err, size_t errlen)
{
    struct json_object *cpu = rt_json_get_object(o, "cpu");
    struct json_object *mem = rt_json_get_object(o, "memory");
    if (!cpu || !mem || !rt_json_get_u64(o, "timestamp_secs", &s->timestamp_secs)) {
        snprintf(err, errlen, "not a sample: cpu, memory or timestamp_secs missing");
        return -1;
    }
    /* Samples stored before timestamp_ms existed: the whole second. */
    if (!rt_json_get_u64(o, "timestamp_ms", &s->timestamp_ms) || s->timestamp_ms / 1000 != s->timestamp_secs)
        s->timestamp_ms = s->timestamp_secs * 1000;
    s->has_interval = rt_json_get_u64(o, "actual_interval_ms", &s->actual_interval_ms);
    parse_cpu(cpu, s);
    parse_memory(mem, &s->memory);
    struct json_object *a = rt_json_get_array(o, "disk");
    s->n_disks = arr_len(a);
    s->disks = rt_arena_alloc(&s->arena, s->n_disks * sizeof(*s->disks));
    for (size_t i = 0; i < s->n_disks; i++)
        parse_disk(json_object_array_get_idx(a, i), &s->disks[i], s);
    a = rt_json_get_array(o, "network");
    s->n_nets = arr_len(a);
    s->nets = rt_arena_alloc(&s->arena, s->n_nets * sizeof(*s->nets));
    for (size_t i = 0; i < s->n_nets; i++)
        parse_net(json_object_array_get_idx(a, i), &s->nets[i], s);
    a = rt_json_get_array(o, "gpu");
    s->n_gpus = arr_len(a);
    s->gpus = rt_arena_alloc(&s->arena, s->n_gpus * sizeof(*s->gpus));
    for (size_t i = 0; i < s->n_gpus; i++)
        parse_gpu(json_object_array_get_idx(a, i), &s->gpus[i], s);
    s->has_gpu_backend = s->job.gates & RT_GATE_GPU;
    rt_json_get_u64(o, "job_id", &s->job_id);
    rt_json_get_u64(o, "host_timestamp_ms", &s->host_timestamp_ms);
    s->job_name = dup_str(s, o, "job_name");
    int64_t pid;
    if (s->has_job && rt_json_get_i64(o, "tracked_pid", &pid))
        s->tracked_pid = (int32_t)pid;
    return 0;
}
