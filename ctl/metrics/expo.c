/* The exposition text: one "# HELP" and "# TYPE" per family, then its
 * samples; base units (bytes, seconds, ratios 0..1), counters end in _total. */
#include "metrics/expo.h"

#include "ctl.h"

#include "rt/job_figures.h"
#include "rt/json.h"
#include "rt/util.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define NS "resource_tracker_"

struct label {
    const char *name, *value;
};

static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP " NS "%s %s\n# TYPE " NS "%s %s\n", name, help, name, type);
}

/* Label values escape backslash, double quote and newline; job names come
 * from users and may hold any of them. */
static void label_value(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\n') {
            fputs("\\n", f);
            continue;
        }
        if (*s == '\\' || *s == '"')
            fputc('\\', f);
        fputc(*s, f);
    }
}

/* The shortest decimal that reads back to v. */
static void number(FILE *f, double v)
{
    if (isnan(v)) {
        fputs("NaN", f);
        return;
    }
    if (isinf(v)) {
        fputs(v > 0 ? "+Inf" : "-Inf", f);
        return;
    }
    char buf[32];
    if (v == floor(v) && fabs(v) < 1e15) { /* counts and bytes: all digits */
        fprintf(f, "%.0f", v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, f);
}

static void sample(FILE *f, const char *name, const struct label *labels, size_t n, double v)
{
    fputs(NS, f);
    fputs(name, f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s%s=\"", i ? "," : "{", labels[i].name);
        label_value(f, labels[i].value ? labels[i].value : "");
        fputc('"', f);
    }
    fputs(n ? "} " : " ", f);
    number(f, v);
    fputc('\n', f);
}

static void scalar(FILE *f, const char *name, const char *type, const char *help, double v)
{
    family(f, name, type, help);
    sample(f, name, NULL, 0, v);
}

/* ---- host ---- */

static void host_cpu(FILE *f, const struct rt_sample *s)
{
    const struct rt_cpu *c = &s->cpu;
    scalar(f, "host_cpus", "gauge", "CPUs the host has online.", (double)c->n_cores);
    scalar(f, "host_cpu_busy_cores", "gauge",
           "CPUs busy on average over the last sampling interval (0 to host_cpus).", c->utilization_pct);
    if (c->n_cores) {
        family(f, "host_cpu_core_busy_ratio", "gauge", "Busy share of each CPU over the last sampling interval.");
        for (size_t i = 0; i < c->n_cores; i++) {
            char id[24];
            snprintf(id, sizeof(id), "%zu", i);
            sample(f, "host_cpu_core_busy_ratio", &(struct label){"cpu", id}, 1, c->per_core_pct[i] / 100.0);
        }
    }
    scalar(f, "host_processes", "gauge", "Processes on the host.", c->process_count);
}

/* A CpuTimes object's modes (every key but "cpu"), with its labels. */
static void cpu_modes(FILE *f, const char *name, struct json_object *t, struct label *labels, size_t n)
{
    json_object_object_foreach(t, mode, v)
    {
        if (strcmp(mode, "cpu") == 0)
            continue;
        labels[n - 1] = (struct label){"mode", mode};
        sample(f, name, labels, n, json_object_get_double(v));
    }
}

/* Counters in node_exporter's convention: rate() of them gives the busy
 * share over any window, where the gauges above hold the last interval
 * only and a slower scrape aliases them. */
static void host_cpu_times(FILE *f, struct json_object *times)
{
    struct json_object *all = rt_json_get_object(times, "all"), *cpus = rt_json_get_array(times, "cpus");
    if (!all || !cpus)
        return;
    family(f, "host_cpu_seconds_total", "counter",
           "Seconds each CPU spent in each mode since boot (node_exporter's node_cpu_seconds_total).");
    for (size_t i = 0; i < json_object_array_length(cpus); i++) {
        struct json_object *t = json_object_array_get_idx(cpus, i);
        char id[24];
        snprintf(id, sizeof(id), "%" PRId64, json_object_get_int64(json_object_object_get(t, "cpu")));
        cpu_modes(f, "host_cpu_seconds_total", t, (struct label[2]){{"cpu", id}}, 2);
    }
    family(f, "host_cpu_time_seconds_total", "counter", "Seconds all CPUs together spent in each mode since boot.");
    cpu_modes(f, "host_cpu_time_seconds_total", all, (struct label[1]){{0}}, 1);
}

static void host_memory(FILE *f, const struct rt_sample *s)
{
    const struct rt_memory *m = &s->memory;
    static const struct {
        const char *name, *help;
        size_t off;
    } rows[] = {
        {"host_memory_total_bytes", "Memory the host has (MemTotal).", offsetof(struct rt_memory, total_mib)},
        {"host_memory_available_bytes", "Memory available for new work (MemAvailable).",
         offsetof(struct rt_memory, available_mib)},
        {"host_memory_used_bytes", "Memory in use (MemTotal - MemAvailable).", offsetof(struct rt_memory, used_mib)},
        {"host_memory_free_bytes", "Unused memory (MemFree).", offsetof(struct rt_memory, free_mib)},
        {"host_memory_buffers_bytes", "Memory in block device buffers (Buffers).",
         offsetof(struct rt_memory, buffers_mib)},
        {"host_memory_cached_bytes", "Memory in the page cache (Cached).", offsetof(struct rt_memory, cached_mib)},
        {"host_swap_total_bytes", "Swap space (SwapTotal).", offsetof(struct rt_memory, swap_total_mib)},
        {"host_swap_used_bytes", "Swap space in use (SwapTotal - SwapFree).",
         offsetof(struct rt_memory, swap_used_mib)},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        uint64_t mib;
        memcpy(&mib, (const char *)m + rows[i].off, sizeof(mib));
        scalar(f, rows[i].name, "gauge", rows[i].help, (double)(mib * RT_MIB));
    }
}

static void host_disks(FILE *f, const struct rt_sample *s)
{
    if (!s->n_disks)
        return;
    family(f, "host_disk_read_bytes_total", "counter", "Bytes read from each block device since boot.");
    for (size_t i = 0; i < s->n_disks; i++)
        sample(f, "host_disk_read_bytes_total", &(struct label){"device", s->disks[i].device}, 1,
               (double)s->disks[i].read_bytes_total);
    family(f, "host_disk_written_bytes_total", "counter", "Bytes written to each block device since boot.");
    for (size_t i = 0; i < s->n_disks; i++)
        sample(f, "host_disk_written_bytes_total", &(struct label){"device", s->disks[i].device}, 1,
               (double)s->disks[i].write_bytes_total);
    static const struct {
        const char *name, *help;
        size_t off;
    } fs[] = {
        {"host_filesystem_size_bytes", "Size of each mounted file system.", offsetof(struct rt_mount, total_bytes)},
        {"host_filesystem_used_bytes", "Bytes in use on each mounted file system.",
         offsetof(struct rt_mount, used_bytes)},
        {"host_filesystem_avail_bytes", "Bytes available to unprivileged users on each mounted file system.",
         offsetof(struct rt_mount, available_bytes)},
    };
    bool any = false;
    for (size_t i = 0; i < s->n_disks; i++)
        any |= s->disks[i].n_mounts > 0;
    for (size_t k = 0; any && k < sizeof(fs) / sizeof(fs[0]); k++) {
        family(f, fs[k].name, "gauge", fs[k].help);
        for (size_t i = 0; i < s->n_disks; i++)
            for (size_t j = 0; j < s->disks[i].n_mounts; j++) {
                const struct rt_mount *m = &s->disks[i].mounts[j];
                struct label l[] = {{"device", s->disks[i].device},
                                    {"mountpoint", m->mount_point},
                                    {"fstype", m->filesystem}};
                uint64_t v;
                memcpy(&v, (const char *)m + fs[k].off, sizeof(v));
                sample(f, fs[k].name, l, 3, (double)v);
            }
    }
}

static void host_network(FILE *f, const struct rt_sample *s)
{
    if (!s->n_nets)
        return;
    family(f, "host_network_receive_bytes_total", "counter", "Bytes received on each network interface.");
    for (size_t i = 0; i < s->n_nets; i++)
        sample(f, "host_network_receive_bytes_total", &(struct label){"interface", s->nets[i].interface}, 1,
               (double)s->nets[i].rx_bytes_total);
    family(f, "host_network_transmit_bytes_total", "counter", "Bytes sent on each network interface.");
    for (size_t i = 0; i < s->n_nets; i++)
        sample(f, "host_network_transmit_bytes_total", &(struct label){"interface", s->nets[i].interface}, 1,
               (double)s->nets[i].tx_bytes_total);
}

/* One GPU family: the value of GPU i, or false when it has none. */
typedef bool (*gpu_value)(const struct rt_gpu *g, double *v);

static bool gpu_busy(const struct rt_gpu *g, double *v) { return *v = g->utilization_pct / 100.0, true; }
static bool gpu_mem_total(const struct rt_gpu *g, double *v) { return *v = (double)g->vram_total_bytes, true; }
static bool gpu_mem_used(const struct rt_gpu *g, double *v) { return *v = (double)g->vram_used_bytes, true; }
static bool gpu_temp(const struct rt_gpu *g, double *v) { return *v = g->temperature_celsius, g->has_temperature; }
static bool gpu_power(const struct rt_gpu *g, double *v) { return *v = g->power_watts, g->has_power; }
static bool gpu_energy(const struct rt_gpu *g, double *v) { return *v = g->energy_joules, g->has_energy; }

static void host_gpus(FILE *f, const struct rt_sample *s)
{
    if (!s->n_gpus)
        return;
    family(f, "host_gpu_info", "gauge", "Each GPU: its name, UUID and vendor (value 1).");
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct rt_gpu *g = &s->gpus[i];
        struct label l[] = {{"gpu", g->host_id}, {"name", g->name}, {"uuid", g->uuid}, {"vendor", g->vendor}};
        sample(f, "host_gpu_info", l, 4, 1);
    }
    static const struct {
        const char *name, *type, *help;
        gpu_value get;
    } fams[] = {
        {"host_gpu_busy_ratio", "gauge", "Busy share of each GPU.", gpu_busy},
        {"host_gpu_memory_total_bytes", "gauge", "Memory (VRAM) of each GPU.", gpu_mem_total},
        {"host_gpu_memory_used_bytes", "gauge", "Memory (VRAM) in use on each GPU.", gpu_mem_used},
        {"host_gpu_temperature_celsius", "gauge", "Temperature of each GPU.", gpu_temp},
        {"host_gpu_power_watts", "gauge", "Power draw of each GPU.", gpu_power},
        {"host_gpu_energy_joules_total", "counter", "Energy each GPU used, as its driver counts it.", gpu_energy},
    };
    for (size_t k = 0; k < sizeof(fams) / sizeof(fams[0]); k++) {
        bool head = false;
        for (size_t i = 0; i < s->n_gpus; i++) {
            double v;
            if (!fams[k].get(&s->gpus[i], &v))
                continue;
            if (!head)
                family(f, fams[k].name, fams[k].type, fams[k].help);
            head = true;
            sample(f, fams[k].name, &(struct label){"gpu", s->gpus[i].host_id}, 1, v);
        }
    }
}

/* ---- who holds each GPU (GetGpus) ---- */

/* A GPU's value from GetGpus, by key ("a.b": b of its object a); false when null. */
static bool gpu_key(struct json_object *g, const char *key, double *v)
{
    const char *dot = strchr(key, '.');
    if (!dot)
        return rt_json_get_double(g, key, v);
    char obj[32];
    snprintf(obj, sizeof(obj), "%.*s", (int)(dot - key), key);
    return rt_json_get_double(rt_json_get_object(g, obj), dot + 1, v);
}

static const struct {
    const char *name, *type, *help, *key;
    double per; /* shown divided by this: percent as a ratio */
} gpu_families[] = {
    {"gpu_idle_held", "gauge", "1 while the GPU is idle but held (docs/gpu.md), 0 otherwise.", "idle", 1},
    {"gpu_busy_but_stalled", "gauge", "1 while the GPU is busy but its SMs are nearly inactive (GPM).",
     "busy_but_stalled", 1},
    {"gpu_xid_errors_total", "counter", "XID errors of the GPU since the daemon started.", "health.xid_errors", 1},
    {"gpu_ecc_corrected_errors", "gauge", "Corrected ECC errors of the GPU since its driver loaded.",
     "health.ecc_corrected", 1},
    {"gpu_ecc_uncorrected_errors", "gauge", "Uncorrected ECC errors of the GPU since its driver loaded.",
     "health.ecc_uncorrected", 1},
    {"gpu_clocks_held_power_seconds_total", "counter", "Time the GPU's clocks were held down by power.",
     "health.throttled_power_secs", 1},
    {"gpu_clocks_held_thermal_seconds_total", "counter", "Time the GPU's clocks were held down by heat.",
     "health.throttled_thermal_secs", 1},
    {"gpu_clocks_held_hw_slowdown_seconds_total", "counter",
     "Time the GPU's clocks were held down by a hardware slowdown.", "health.throttled_hw_slowdown_secs", 1},
    {"gpu_sm_active_ratio", "gauge", "Share of time the GPU's SMs were active (GPM).", "gpm.sm_active_pct", 100},
    {"gpu_sm_occupancy_ratio", "gauge", "The GPU's SM occupancy (GPM).", "gpm.sm_occupancy_pct", 100},
    {"gpu_tensor_active_ratio", "gauge", "Share of time the GPU's tensor cores were active (GPM).",
     "gpm.tensor_active_pct", 100},
    {"gpu_dram_bandwidth_ratio", "gauge", "The GPU's DRAM bandwidth used, of its peak (GPM).", "gpm.dram_bw_pct",
     100},
};

/* The "gpu" label, as the host families have it: the NVIDIA index, the AMD
 * PCI address. */
static void gpu_label(struct json_object *g, char *buf, size_t size)
{
    const char *vendor = rt_json_get_string(g, "vendor"), *bus = rt_json_get_string(g, "pci_bus_id");
    int64_t idx = 0;
    rt_json_get_i64(g, "index", &idx);
    if (vendor && strcmp(vendor, "amd") == 0 && bus)
        snprintf(buf, size, "%s", bus);
    else
        snprintf(buf, size, "%lld", (long long)idx);
}

/* Each user's (hidden processes together, as user "(hidden)") processes,
 * memory and GPUs: per GPU, and per user over all GPUs. */
struct gpu_user {
    int64_t uid; /* -1: hidden */
    char name[64];
    double procs, vram, gpus, idle;
};

static struct gpu_user *gpu_user(struct gpu_user *v, size_t *n, size_t max, int64_t uid)
{
    for (size_t i = 0; i < *n; i++)
        if (v[i].uid == uid)
            return &v[i];
    if (*n == max)
        return NULL;
    struct gpu_user *u = &v[(*n)++];
    *u = (struct gpu_user){.uid = uid};
    if (uid >= 0)
        ctl_fmt_user(uid, u->name, sizeof(u->name));
    else
        snprintf(u->name, sizeof(u->name), "(hidden)");
    return u;
}

#define GPU_USERS_MAX 256

static void gpu_users(FILE *f, struct json_object *gpus)
{
    size_t n = json_object_array_length(gpus);
    struct gpu_user all[GPU_USERS_MAX];
    size_t nall = 0;
    bool head = false;
    for (size_t i = 0; i < n; i++) {
        struct json_object *g = json_object_array_get_idx(gpus, i), *procs = rt_json_get_array(g, "processes");
        char index[32];
        gpu_label(g, index, sizeof(index));
        struct gpu_user one[GPU_USERS_MAX];
        size_t none = 0;
        for (size_t k = 0; procs && k < json_object_array_length(procs); k++) {
            struct json_object *p = json_object_array_get_idx(procs, k);
            int64_t uid = -1;
            double vram = 0;
            rt_json_get_i64(p, "uid", &uid);
            rt_json_get_double(p, "vram_bytes", &vram);
            struct gpu_user *u = gpu_user(one, &none, GPU_USERS_MAX, uid);
            if (u) {
                u->procs++;
                u->vram += vram;
            }
        }
        bool idle = false;
        rt_json_get_bool(g, "idle", &idle);
        for (size_t k = 0; k < none; k++) {
            if (!head)
                family(f, "gpu_user_memory_bytes", "gauge", "GPU memory each user's processes hold on the GPU.");
            head = true;
            struct label l[] = {{"gpu", index}, {"user", one[k].name}};
            sample(f, "gpu_user_memory_bytes", l, 2, one[k].vram);
            struct gpu_user *u = gpu_user(all, &nall, GPU_USERS_MAX, one[k].uid);
            if (u) {
                u->procs += one[k].procs;
                u->vram += one[k].vram;
                u->gpus++;
                u->idle += idle;
            }
        }
    }
    static const struct {
        const char *name, *help;
        size_t off;
    } per_user[] = {
        {"user_gpu_held_gpus", "GPUs the user's processes are on now.", offsetof(struct gpu_user, gpus)},
        {"user_gpu_idle_held_gpus", "GPUs idle but held that the user's processes are on now.",
         offsetof(struct gpu_user, idle)},
        {"user_gpu_processes", "The user's processes on GPUs now.", offsetof(struct gpu_user, procs)},
        {"user_gpu_memory_bytes", "GPU memory the user's processes hold now, all GPUs together.",
         offsetof(struct gpu_user, vram)},
    };
    for (size_t k = 0; nall && k < sizeof(per_user) / sizeof(per_user[0]); k++) {
        family(f, per_user[k].name, "gauge", per_user[k].help);
        for (size_t i = 0; i < nall; i++) {
            double v;
            memcpy(&v, (const char *)&all[i] + per_user[k].off, sizeof(v));
            sample(f, per_user[k].name, &(struct label){"user", all[i].name}, 1, v);
        }
    }
}

static void gpu_holders(FILE *f, struct json_object *gpus, double now)
{
    size_t n = gpus ? json_object_array_length(gpus) : 0;
    if (!n)
        return;
    for (size_t k = 0; k < sizeof(gpu_families) / sizeof(gpu_families[0]); k++) {
        bool head = false;
        for (size_t i = 0; i < n; i++) {
            struct json_object *g = json_object_array_get_idx(gpus, i);
            double v;
            bool flag;
            bool has = strchr(gpu_families[k].key, '.') ? gpu_key(g, gpu_families[k].key, &v)
                                                        : rt_json_get_bool(g, gpu_families[k].key, &flag);
            if (!has)
                continue;
            if (!strchr(gpu_families[k].key, '.'))
                v = flag;
            if (!head)
                family(f, gpu_families[k].name, gpu_families[k].type, gpu_families[k].help);
            head = true;
            char index[32];
            gpu_label(g, index, sizeof(index));
            sample(f, gpu_families[k].name, &(struct label){"gpu", index}, 1, v / gpu_families[k].per);
        }
    }
    bool head = false;
    for (size_t i = 0; i < n; i++) {
        struct json_object *g = json_object_array_get_idx(gpus, i);
        double since = 0;
        bool idle;
        if (!rt_json_get_bool(g, "idle", &idle))
            continue; /* not judged */
        rt_json_get_double(g, "idle_since", &since);
        if (!head)
            family(f, "gpu_idle_held_seconds", "gauge", "How long the GPU has been idle but held (0 when it is not).");
        head = true;
        char index[32];
        gpu_label(g, index, sizeof(index));
        sample(f, "gpu_idle_held_seconds", &(struct label){"gpu", index}, 1, idle && now > since ? now - since : 0);
    }
    gpu_users(f, gpus);
}

/* ---- jobs ---- */

enum section { TOP, SUMMARY, CURRENT, REQUEST, EFFICIENCY, NOTES };

struct job_family {
    const char *name, *type, *help;
    enum section section;
    const char *key;
};

/* The job's own families; the figures' come from rt/job_figures.h. */
static const struct job_family job_families[] = {
    {"job_running", "gauge", "1 while the job is tracked, 0 once it has ended.", TOP, "state"},
    {"job_start_time_seconds", "gauge", "When the job started, in seconds since the epoch.", TOP, "started_at"},
    {"job_end_time_seconds", "gauge", "When the job ended, in seconds since the epoch.", TOP, "ended_at"},
    {"job_processes", "gauge", "Processes in the running job's tree.", CURRENT, "processes"},
    {"job_request_cpus", "gauge", "CPUs the job asked for.", REQUEST, "cpus"},
    {"job_request_memory_bytes", "gauge", "Memory the job asked for.", REQUEST, "memory_bytes"},
    {"job_request_gpus", "gauge", "GPUs the job asked for.", REQUEST, "gpus"},
    {"job_cpu_efficiency_ratio", "gauge", "CPU time over the requested CPUs times the wall time.", EFFICIENCY,
     "cpu_pct"},
    {"job_memory_efficiency_ratio", "gauge", "The job's memory peak over the memory it asked for.", EFFICIENCY,
     "memory_pct"},
    {"job_gpu_efficiency_ratio", "gauge", "Mean GPUs in use over the GPUs the job asked for.", EFFICIENCY,
     "gpu_pct"},
    {"job_notes", "gauge", "Notes on what the job should ask for instead (docs/efficiency.md).", NOTES, "notes"},
};

static bool job_value(struct json_object *job, const struct job_family *fam, double *v)
{
    if (fam->section == TOP && strcmp(fam->key, "state") == 0) {
        const char *state = rt_json_get_string(job, "state");
        *v = state && strcmp(state, "running") == 0;
        return true;
    }
    if (fam->section == NOTES) {
        struct json_object *notes = rt_json_get_array(job, "notes");
        *v = notes ? (double)json_object_array_length(notes) : 0;
        return notes != NULL;
    }
    struct json_object *o = fam->section == SUMMARY      ? rt_json_get_object(job, "summary")
                            : fam->section == CURRENT    ? rt_json_get_object(job, "current")
                            : fam->section == REQUEST    ? rt_json_get_object(job, "request")
                            : fam->section == EFFICIENCY ? rt_json_get_object(job, "efficiency")
                                                         : job;
    if (fam->section == SUMMARY)
        return rt_fig_summary_get(o, fam->key, v);
    if (!rt_json_get_double(o, fam->key, v))
        return false;
    if (fam->section == EFFICIENCY)
        *v /= 100; /* percent in the API, a ratio in Prometheus */
    return true;
}

struct job_labels {
    char id[24], user[64];
    struct label l[3];
};

static void job_labels(struct json_object *job, struct job_labels *jl)
{
    int64_t id = 0, uid = -1;
    rt_json_get_i64(job, "id", &id);
    rt_json_get_i64(job, "owner_uid", &uid);
    snprintf(jl->id, sizeof(jl->id), "%" PRId64, id);
    ctl_fmt_user(uid, jl->user, sizeof(jl->user));
    jl->l[0] = (struct label){"job_id", jl->id};
    jl->l[1] = (struct label){"job_name", rt_json_get_string(job, "name")};
    jl->l[2] = (struct label){"user", jl->user};
}

/* One family: a sample per job that has its figure. */
static void job_family(FILE *f, struct json_object *list, const struct job_labels *labels,
                       const struct job_family *fam)
{
    bool head = false;
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        double v;
        if (!job_value(json_object_array_get_idx(list, i), fam, &v))
            continue;
        if (!head)
            family(f, fam->name, fam->type, fam->help);
        head = true;
        sample(f, fam->name, labels[i].l, 3, v);
    }
}

static void jobs(FILE *f, struct json_object *list)
{
    size_t n = list ? json_object_array_length(list) : 0;
    if (!n)
        return;
    struct job_labels *labels = rt_xcalloc(n, sizeof(*labels));
    for (size_t i = 0; i < n; i++)
        job_labels(json_object_array_get_idx(list, i), &labels[i]);
    for (size_t k = 0; k < sizeof(job_families) / sizeof(job_families[0]); k++)
        job_family(f, list, labels, &job_families[k]);
    for (size_t k = 0; k < rt_fig_ntotals; k++) {
        const struct rt_fig_total *t = &rt_fig_totals[k];
        if (t->prom)
            job_family(f, list, labels, &(struct job_family){t->prom, t->prom_type, t->prom_help, SUMMARY, t->key});
    }
    for (size_t k = 0; k < rt_fig_nsamples; k++) {
        const struct rt_fig_sample *r = &rt_fig_samples[k];
        if (r->prom_now)
            job_family(f, list, labels, &(struct job_family){r->prom_now, "gauge", r->prom_now_help, CURRENT, r->now});
    }
    free(labels);
}

void ctl_expo_write(FILE *f, const struct ctl_expo *in)
{
    family(f, "build_info", "gauge", "The version of resource-trackerd that answered (value 1).");
    sample(f, "build_info", &(struct label){"version", in->version}, 1, 1);
    const struct rt_sample *s = in->host;
    scalar(f, "host_sample_timestamp_seconds", "gauge", "When the host sample was taken, in seconds since the epoch.",
           (double)s->timestamp_secs);
    host_cpu(f, s);
    host_cpu_times(f, in->cpu_times);
    host_memory(f, s);
    host_disks(f, s);
    host_network(f, s);
    host_gpus(f, s);
    gpu_holders(f, in->gpus, in->gpus_at);
    jobs(f, in->jobs);
}
