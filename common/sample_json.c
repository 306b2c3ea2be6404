#include "rt/sample_json.h"

#include "rt/json.h"

#include <math.h>
#include <stdio.h>
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

static struct json_object *opt_u64(bool has, uint64_t v)
{
    return has ? rt_json_u64(v) : NULL;
}

static struct json_object *cpu_json(const struct rt_sample *s)
{
    const struct rt_cpu *c = &s->cpu;
    struct json_object *o = json_object_new_object();
    add(o, "cgroup_usage_secs", c->has_cgroup ? rt_json_double(c->cgroup_usage_secs, DEC_SECS) : NULL);
    add(o, "cgroup_utilization_pct",
        c->has_cgroup ? rt_json_double(c->cgroup_utilization_pct, DEC_CORES) : NULL);
    struct json_object *cores = json_object_new_array_ext((int)c->n_cores);
    for (size_t i = 0; i < c->n_cores; i++)
        json_object_array_add(cores, rt_json_double(c->per_core_pct[i], DEC_PCT));
    add(o, "per_core_pct", cores);
    /* The job's keys are filled by rt_sample_json_set_job; reserve their
     * slots here so the key order stays sorted (rt_fig_samples is). */
    bool count_added = false;
    for (size_t i = 0; i < rt_fig_nsamples; i++) {
        const char *k = rt_fig_samples[i].json;
        if (!k)
            continue;
        if (!count_added && strcmp(k, "process_count") > 0) {
            add(o, "process_count", json_object_new_int64(c->process_count));
            count_added = true;
        }
        add(o, k, NULL);
    }
    add(o, "stime_secs", rt_json_double(c->stime_secs, DEC_SECS));
    add(o, "utilization_pct", rt_json_double(c->utilization_pct, DEC_CORES));
    add(o, "utime_secs", rt_json_double(c->utime_secs, DEC_SECS));
    return o;
}

static struct json_object *memory_json(const struct rt_memory *m)
{
    struct json_object *o = json_object_new_object();
    add(o, "active_mib", rt_json_u64(m->active_mib));
    add(o, "available_mib", rt_json_u64(m->available_mib));
    add(o, "buffers_mib", rt_json_u64(m->buffers_mib));
    add(o, "cached_mib", rt_json_u64(m->cached_mib));
    add(o, "free_mib", rt_json_u64(m->free_mib));
    add(o, "inactive_mib", rt_json_u64(m->inactive_mib));
    add(o, "swap_total_mib", rt_json_u64(m->swap_total_mib));
    add(o, "swap_used_mib", rt_json_u64(m->swap_used_mib));
    add(o, "swap_used_pct", rt_json_double(m->swap_used_pct, DEC_PCT));
    add(o, "total_mib", rt_json_u64(m->total_mib));
    add(o, "used_mib", rt_json_u64(m->used_mib));
    add(o, "used_pct", rt_json_double(m->used_pct, DEC_PCT));
    return o;
}

static struct json_object *disk_json(const struct rt_disk *d)
{
    struct json_object *o = json_object_new_object();
    add(o, "capacity_bytes", opt_u64(d->has_capacity, d->capacity_bytes));
    add(o, "device", json_object_new_string(d->device ? d->device : ""));
    add(o, "device_type", rt_json_string_or_null(d->device_type));
    add(o, "model", rt_json_string_or_null(d->model));
    struct json_object *mounts = json_object_new_array_ext((int)d->n_mounts);
    for (size_t i = 0; i < d->n_mounts; i++) {
        const struct rt_mount *m = &d->mounts[i];
        struct json_object *mo = json_object_new_object();
        add(mo, "available_bytes", rt_json_u64(m->available_bytes));
        add(mo, "filesystem", json_object_new_string(m->filesystem ? m->filesystem : ""));
        add(mo, "mount_point", json_object_new_string(m->mount_point ? m->mount_point : ""));
        add(mo, "total_bytes", rt_json_u64(m->total_bytes));
        add(mo, "used_bytes", rt_json_u64(m->used_bytes));
        add(mo, "used_pct", rt_json_double(m->used_pct, DEC_PCT));
        json_object_array_add(mounts, mo);
    }
    add(o, "mounts", mounts);
    add(o, "read_bytes_per_sec", rt_json_double(d->read_bytes_per_sec, DEC_RATE));
    add(o, "read_bytes_total", rt_json_u64(d->read_bytes_total));
    add(o, "serial", rt_json_string_or_null(d->serial));
    add(o, "stacked", json_object_new_boolean(d->stacked));
    add(o, "vendor", rt_json_string_or_null(d->vendor));
    add(o, "write_bytes_per_sec", rt_json_double(d->write_bytes_per_sec, DEC_RATE));
    add(o, "write_bytes_total", rt_json_u64(d->write_bytes_total));
    return o;
}

static struct json_object *net_json(const struct rt_netif *n)
{
    struct json_object *o = json_object_new_object();
    add(o, "driver", rt_json_string_or_null(n->driver));
    add(o, "interface", json_object_new_string(n->interface ? n->interface : ""));
    add(o, "mac_address", rt_json_string_or_null(n->mac_address));
    add(o, "mtu", n->has_mtu ? json_object_new_int64(n->mtu) : NULL);
    add(o, "operstate", rt_json_string_or_null(n->operstate));
    add(o, "rx_bytes_per_sec", rt_json_double(n->rx_bytes_per_sec, DEC_RATE));
    add(o, "rx_bytes_total", rt_json_u64(n->rx_bytes_total));
    add(o, "speed_mbps", n->has_speed ? json_object_new_int64(n->speed_mbps) : NULL);
    add(o, "tx_bytes_per_sec", rt_json_double(n->tx_bytes_per_sec, DEC_RATE));
    add(o, "tx_bytes_total", rt_json_u64(n->tx_bytes_total));
    return o;
}

static struct json_object *gpu_json(const struct rt_gpu *g)
{
    struct json_object *o = json_object_new_object();
    add(o, "core_count", NULL);
    struct json_object *detail = json_object_new_object();
    for (size_t i = 0; i < g->n_detail; i++)
        add(detail, g->detail[i].key, json_object_new_string(g->detail[i].value ? g->detail[i].value : ""));
    add(o, "detail", detail);
    add(o, "device_type", json_object_new_string("GPU"));
    add(o, "energy_joules", g->has_energy ? rt_json_double(g->energy_joules, 3) : NULL);
    add(o, "frequency_mhz", g->has_frequency ? json_object_new_int64(g->frequency_mhz) : NULL);
    add(o, "host_id", json_object_new_string(g->host_id ? g->host_id : ""));
    add(o, "name", json_object_new_string(g->name ? g->name : ""));
    add(o, "power_watts", g->has_power ? rt_json_double(g->power_watts, DEC_WATTS) : NULL);
    add(o, "temperature_celsius", g->has_temperature ? json_object_new_int64(g->temperature_celsius) : NULL);
    add(o, "utilization_pct", rt_json_double(g->utilization_pct, DEC_PCT));
    add(o, "uuid", json_object_new_string(g->uuid ? g->uuid : ""));
    add(o, "vendor", rt_json_string_or_null(g->vendor));
    add(o, "vram_total_bytes", rt_json_u64(g->vram_total_bytes));
    add(o, "vram_used_bytes", rt_json_u64(g->vram_used_bytes));
    add(o, "vram_used_pct", rt_json_double(g->vram_used_pct, DEC_PCT));
    return o;
}

struct json_object *rt_sample_to_json(const struct rt_sample *s)
{
    struct json_object *o = json_object_new_object();
    if (s->has_interval)
        add(o, "actual_interval_ms", rt_json_u64(s->actual_interval_ms));
    add(o, "cpu", cpu_json(s));
    struct json_object *disks = json_object_new_array_ext((int)s->n_disks);
    for (size_t i = 0; i < s->n_disks; i++)
        json_object_array_add(disks, disk_json(&s->disks[i]));
    add(o, "disk", disks);
    struct json_object *gpus = json_object_new_array_ext((int)s->n_gpus);
    for (size_t i = 0; i < s->n_gpus; i++)
        json_object_array_add(gpus, gpu_json(&s->gpus[i]));
    add(o, "gpu", gpus);
    add(o, "host_timestamp_ms", NULL);
    add(o, "job_id", NULL);
    add(o, "job_name", NULL);
    add(o, "memory", memory_json(&s->memory));
    struct json_object *nets = json_object_new_array_ext((int)s->n_nets);
    for (size_t i = 0; i < s->n_nets; i++)
        json_object_array_add(nets, net_json(&s->nets[i]));
    add(o, "network", nets);
    add(o, RT_SAMPLE_VERSION_KEY, json_object_new_string(RT_VERSION));
    add(o, "timestamp_ms", rt_json_u64(s->timestamp_ms));
    add(o, "timestamp_secs", rt_json_u64(s->timestamp_secs));
    add(o, "tracked_pid", NULL);
    rt_sample_json_set_job(o, s);
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
