/* NVIDIA back end: libnvidia-ml.so.1 loaded with dlopen (gpu_nvml.h declares
 * the few types and symbols we use). The versioned names the driver exports
 * are preferred, older ones are fallbacks. */
#include "collect/gpu/gpu_nvml.h"

#include "system/log.h"
#include "rt/util.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const field_names[F_COUNT] = {
    "utilization", "memory", "temperature", "power", "graphics clock", "energy counter",
    "compute processes", "graphics processes", "process utilization", "name/UUID/PCI",
    "MIG instances", "ECC errors", "retired pages", "remapped rows", "clocks event reasons", "GPM metrics",
};

const char *gpu_nvml_errstr(const struct nvml_lib *lib, nvml_ret r)
{
    const char *s = lib->error_string ? lib->error_string(r) : NULL;
    return s ? s : "unknown error";
}

static bool is_lost(nvml_ret r)
{
    return r == NVML_ERROR_GPU_IS_LOST || r == NVML_ERROR_RESET_REQUIRED || r == NVML_ERROR_GPU_NOT_FOUND;
}

bool gpu_nvml_check(struct nvml_gpu *g, enum field f, nvml_ret r, bool *lost)
{
    if (r == NVML_SUCCESS)
        return true;
    if (is_lost(r)) {
        *lost = true;
        snprintf(g->err, sizeof(g->err), "%s", gpu_nvml_errstr(g->lib, r));
        return false;
    }
    if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_FUNCTION_NOT_FOUND || r == NVML_ERROR_NO_PERMISSION) {
        g->unsupported |= 1u << f;
        if (r == NVML_ERROR_NO_PERMISSION)
            rt_log_once(&g->logged[f], LOG_INFO, "NVIDIA GPU %u: no permission to read %s", g->index, field_names[f]);
        return false;
    }
    rt_log_once(&g->logged[f], LOG_INFO, "NVIDIA GPU %u: reading %s failed: %s", g->index, field_names[f],
                gpu_nvml_errstr(g->lib, r));
    return false;
}

bool gpu_nvml_wanted(const struct nvml_gpu *g, enum field f, const void *fn)
{
    return fn && !(g->unsupported & (1u << f));
}

bool gpu_nvml_spaced_due(struct nvml_spaced *q)
{
    if (q->skip) {
        q->skip--;
        return false;
    }
    q->cpu0 = rt_thread_cpu_ns(); /* CPU, not wall: a poller preempted on a busy host is not slowed by the driver */
    return true;
}

void gpu_nvml_spaced_done(const struct nvml_gpu *g, struct nvml_spaced *q)
{
    q->skip = rt_thread_cpu_ns() - q->cpu0 > GPU_SLOW_QUERY_NS ? g->slow_skip : 0;
}

static void *sym(void *so, const char *const *names, int *which)
{
    for (int i = 0; names[i]; i++) {
        void *p = dlsym(so, names[i]);
        if (p) {
            if (which)
                *which = i;
            return p;
        }
    }
    return NULL;
}

#define SYM(field, ...) (*(void **)&lib->field = sym(lib->so, (const char *const[]){__VA_ARGS__, NULL}, NULL))

static void resolve(struct nvml_lib *lib)
{
    SYM(init, "nvmlInit_v2", "nvmlInit");
    SYM(shutdown, "nvmlShutdown");
    SYM(error_string, "nvmlErrorString");
    SYM(get_count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    SYM(get_handle, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    SYM(driver_version, "nvmlSystemGetDriverVersion");
    SYM(name, "nvmlDeviceGetName");
    SYM(uuid, "nvmlDeviceGetUUID");
    SYM(utilization, "nvmlDeviceGetUtilizationRates");
    SYM(memory, "nvmlDeviceGetMemoryInfo");
    SYM(temperature, "nvmlDeviceGetTemperature");
    SYM(power, "nvmlDeviceGetPowerUsage");
    SYM(clock, "nvmlDeviceGetClockInfo");
    SYM(energy, "nvmlDeviceGetTotalEnergyConsumption");
    SYM(proc_util, "nvmlDeviceGetProcessUtilization");
    int which = 0;
    *(void **)&lib->pci = sym(lib->so, (const char *const[]){"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2",
                                                              "nvmlDeviceGetPciInfo", NULL}, &which);
    lib->pci_v1 = which == 2;
    /* _v2 (24-byte entries in every driver that has it) before _v3 (whose
     * entry size changed with the driver), the plain name (16 bytes) last. */
    static const char *const compute[] = {"nvmlDeviceGetComputeRunningProcesses_v2",
                                          "nvmlDeviceGetComputeRunningProcesses_v3",
                                          "nvmlDeviceGetComputeRunningProcesses", NULL};
    static const char *const graphics[] = {"nvmlDeviceGetGraphicsRunningProcesses_v2",
                                           "nvmlDeviceGetGraphicsRunningProcesses_v3",
                                           "nvmlDeviceGetGraphicsRunningProcesses", NULL};
    *(void **)&lib->compute_procs = sym(lib->so, compute, &which);
    lib->compute_stride = which == 2 ? sizeof(struct nvml_process_v1) : sizeof(struct nvml_process_v2);
    *(void **)&lib->graphics_procs = sym(lib->so, graphics, &which);
    lib->graphics_stride = which == 2 ? sizeof(struct nvml_process_v1) : sizeof(struct nvml_process_v2);
    gpu_nvml_resolve_health(lib, lib->so);
}

struct nvml_lib *gpu_nvml_open(const char *path)
{
    void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!so) {
        const char *e = dlerror();
        rt_debug("NVML not available: %s", e ? e : path);
        return NULL;
    }
    struct nvml_lib *lib = rt_xcalloc(1, sizeof(*lib));
    lib->so = so;
    resolve(lib);
    if (!lib->init || !lib->shutdown || !lib->get_count || !lib->get_handle) {
        rt_warn("NVML: %s lacks nvmlInit/nvmlDeviceGetCount/nvmlDeviceGetHandleByIndex; NVIDIA GPUs not sampled", path);
        dlclose(so);
        free(lib);
        return NULL;
    }
    nvml_ret r = lib->init();
    if (r != NVML_SUCCESS) {
        /* A library without a loaded driver is an ordinary GPU-less host. */
        rt_log(r == NVML_ERROR_DRIVER_NOT_LOADED ? LOG_DEBUG : LOG_INFO, "NVML initialisation failed: %s",
               gpu_nvml_errstr(lib, r));
        dlclose(so);
        free(lib);
        return NULL;
    }
    if (!lib->driver_version || lib->driver_version(lib->driver, sizeof(lib->driver)) != NVML_SUCCESS)
        lib->driver[0] = '\0';
    rt_info("NVML loaded (driver %s)", lib->driver[0] ? lib->driver : "unknown");
    return lib;
}

void gpu_nvml_close(struct nvml_lib *lib)
{
    lib->shutdown();
    dlclose(lib->so);
    free(lib);
}

static enum gpu_status ensure_handle(struct nvml_gpu *g)
{
    if (g->h)
        return GPU_OK;
    nvml_ret r = g->lib->get_handle(g->index, &g->h);
    if (r != NVML_SUCCESS) {
        g->h = NULL;
        snprintf(g->err, sizeof(g->err), "%s", gpu_nvml_errstr(g->lib, r));
        return GPU_LOST;
    }
    return GPU_OK;
}

static enum gpu_status nv_util(void *dev, double *pct)
{
    struct nvml_gpu *g = dev;
    if (ensure_handle(g) != GPU_OK)
        return GPU_LOST;
    if (!gpu_nvml_wanted(g, F_UTIL, g->lib->utilization))
        return GPU_FAILED;
    struct nvml_utilization u;
    bool lost = false;
    if (!gpu_nvml_check(g, F_UTIL, g->lib->utilization(g->h, &u), &lost))
        return lost ? GPU_LOST : GPU_FAILED;
    *pct = u.gpu;
    return GPU_OK;
}

/* Name, UUID and bus id: read once, and again after the device comes back. */
static void read_info(struct nvml_gpu *g, bool *lost)
{
    struct nvml_lib *lib = g->lib;
    if (g->have_info)
        return;
    if (!lib->name || !gpu_nvml_check(g, F_INFO, lib->name(g->h, g->name, sizeof(g->name)), lost))
        g->name[0] = '\0';
    if (!lib->uuid || !gpu_nvml_check(g, F_INFO, lib->uuid(g->h, g->uuid, sizeof(g->uuid)), lost) ||
        !g->uuid[0])
        snprintf(g->uuid, sizeof(g->uuid), "nvidia-%u", g->index);
    struct nvml_pci_info pci;
    memset(&pci, 0, sizeof(pci));
    g->bus_id[0] = '\0';
    if (lib->pci && gpu_nvml_check(g, F_INFO, lib->pci(g->h, &pci), lost)) {
        const char *b = !lib->pci_v1 && pci.bus_id[0] ? pci.bus_id : pci.bus_id_legacy;
        snprintf(g->bus_id, sizeof(g->bus_id), "%.*s", (int)sizeof(pci.bus_id), b);
    }
    g->have_info = !*lost;
}

/* Fetch one process list into g->raw, growing it on INSUFFICIENT_SIZE (the
 * list can grow between calls, so a few rounds). */
static nvml_ret fetch_list(struct nvml_gpu *g, proc_list_fn fn, unsigned *count)
{
    for (int round = 0; round < 4; round++) {
        unsigned n = (unsigned)g->raw_cap;
        nvml_ret r = fn(g->h, &n, g->raw);
        if (r != NVML_ERROR_INSUFFICIENT_SIZE) {
            *count = r == NVML_SUCCESS && n <= g->raw_cap ? n : 0;
            return r;
        }
        size_t want = (size_t)n + 8; /* headroom for processes starting meanwhile */
        if (want < 2 * g->raw_cap)
            want = 2 * g->raw_cap;
        g->raw = rt_xrealloc(g->raw, want * NVML_PROCESS_MAX_SIZE);
        g->raw_cap = want;
    }
    *count = 0;
    return NVML_ERROR_INSUFFICIENT_SIZE;
}

static void push_proc(struct rt_gpu_dev *d, int32_t pid, uint64_t vram, uint32_t gi, uint32_t ci)
{
    if (d->n_procs == d->procs_cap) {
        d->procs_cap = d->procs_cap ? 2 * d->procs_cap : 16;
        d->procs = rt_xrealloc(d->procs, d->procs_cap * sizeof(*d->procs));
    }
    d->procs[d->n_procs++] = (struct rt_gpu_proc){.pid = pid, .vram_bytes = vram, .gi = gi, .ci = ci};
}

static int cmp_proc(const void *a, const void *b)
{
    int32_t x = ((const struct rt_gpu_proc *)a)->pid, y = ((const struct rt_gpu_proc *)b)->pid;
    return (x > y) - (x < y);
}

/* Sort by pid and merge a PID listed as both compute and graphics: it is one
 * process, and NVML reports the same memory in both lists, so keep the max. */
static void merge_procs(struct rt_gpu_dev *d)
{
    if (d->n_procs < 2)
        return;
    qsort(d->procs, d->n_procs, sizeof(*d->procs), cmp_proc);
    size_t w = 0;
    for (size_t i = 0; i < d->n_procs; i++) {
        if (w && d->procs[w - 1].pid == d->procs[i].pid) {
            struct rt_gpu_proc *p = &d->procs[w - 1];
            if (d->procs[i].vram_bytes > p->vram_bytes)
                p->vram_bytes = d->procs[i].vram_bytes;
            if (d->procs[i].sm_pct > p->sm_pct)
                p->sm_pct = d->procs[i].sm_pct;
            p->has_sm |= d->procs[i].has_sm;
        } else {
            d->procs[w++] = d->procs[i];
        }
    }
    d->n_procs = w;
}

static bool read_list(struct nvml_gpu *g, enum field f, proc_list_fn fn, size_t stride, struct rt_gpu_dev *d,
                      bool *lost)
{
    if (!gpu_nvml_wanted(g, f, fn))
        return false;
    unsigned n = 0;
    if (!gpu_nvml_check(g, f, fetch_list(g, fn, &n), lost))
        return false;
    for (unsigned i = 0; i < n; i++) {
        const unsigned char *e = (const unsigned char *)g->raw + (size_t)i * stride;
        unsigned pid, gi = RT_GPU_NO_ID, ci = RT_GPU_NO_ID;
        unsigned long long mem;
        memcpy(&pid, e, sizeof(pid));
        memcpy(&mem, e + offsetof(struct nvml_process_v1, used_gpu_memory), sizeof(mem));
        if (stride >= sizeof(struct nvml_process_v2)) { /* the MIG instance it runs in */
            memcpy(&gi, e + offsetof(struct nvml_process_v2, gpu_instance_id), sizeof(gi));
            memcpy(&ci, e + offsetof(struct nvml_process_v2, compute_instance_id), sizeof(ci));
        }
        push_proc(d, (int32_t)pid, mem == NVML_VALUE_NOT_AVAILABLE ? 0 : mem, gi, ci);
    }
    return true;
}

static int cmp_sample(const void *a, const void *b)
{
    unsigned x = ((const struct nvml_proc_util *)a)->pid, y = ((const struct nvml_proc_util *)b)->pid;
    return (x > y) - (x < y);
}

/* Nothing ran: every listed process's share is known, and 0. */
static void no_proc_util(struct rt_gpu_dev *d)
{
    d->has_proc_util = true;
    for (size_t i = 0; i < d->n_procs; i++)
        d->procs[i].has_sm = true;
}

/* Per-process SM utilisation since the previous poll: the mean of each PID's
 * samples newer than the last one seen. A PID that has samples but has left
 * the lists (it just exited) is kept with 0 VRAM, so its work is counted.
 * Not asked when no process is listed and every utilisation reading since
 * the last poll was 0: nothing to attribute, and some drivers take
 * milliseconds to answer. (A listed process is asked for even then: its
 * kernels may have run between the readings.) */
static void read_proc_util(struct nvml_gpu *g, struct rt_gpu_dev *d, bool *lost)
{
    struct nvml_lib *lib = g->lib;
    if (!gpu_nvml_wanted(g, F_PROC_UTIL, lib->proc_util))
        return;
    if (d->n_procs == 0 && d->has_util && d->util_pct == 0) {
        g->last_seen_us = rt_real_ns() / 1000;
        no_proc_util(d);
        return;
    }
    if (!g->last_seen_us)
        g->last_seen_us = rt_real_ns() / 1000 - g->interval_us;
    unsigned n = 0;
    nvml_ret r = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int round = 0; round < 4 && r == NVML_ERROR_INSUFFICIENT_SIZE; round++) {
        n = (unsigned)g->samples_cap;
        r = lib->proc_util(g->h, g->samples, &n, g->last_seen_us);
        if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
            size_t want = (size_t)n + 8 > 2 * g->samples_cap ? (size_t)n + 8 : 2 * g->samples_cap;
            g->samples = rt_xrealloc(g->samples, want * sizeof(*g->samples));
            g->samples_cap = want;
        }
    }
    if (r == NVML_ERROR_NOT_FOUND) { /* no samples since last time: nothing ran */
        no_proc_util(d);
        return;
    }
    if (!gpu_nvml_check(g, F_PROC_UTIL, r, lost) || n > g->samples_cap)
        return;
    no_proc_util(d);
    qsort(g->samples, n, sizeof(*g->samples), cmp_sample);
    size_t listed = d->n_procs;
    for (unsigned i = 0; i < n;) {
        unsigned j = i;
        double sum = 0;
        for (; j < n && g->samples[j].pid == g->samples[i].pid; j++) {
            sum += g->samples[j].sm;
            if (g->samples[j].timestamp_us > g->last_seen_us)
                g->last_seen_us = g->samples[j].timestamp_us;
        }
        struct rt_gpu_proc key = {.pid = (int32_t)g->samples[i].pid};
        struct rt_gpu_proc *p = bsearch(&key, d->procs, listed, sizeof(*d->procs), cmp_proc);
        if (!p) {
            push_proc(d, key.pid, 0, RT_GPU_NO_ID, RT_GPU_NO_ID);
            p = &d->procs[d->n_procs - 1];
            p->has_sm = true;
        }
        p->sm_pct = sum / (double)(j - i);
        i = j;
    }
    merge_procs(d);
}

/* The energy counter; while it is spaced (or an answer failed), the last
 * reading plus power x time since, never less than what was published
 * before (a counter that goes back, after a driver reload, is taken as it
 * is). Power is not integrated across a loss of the device. */
static void read_energy(struct nvml_gpu *g, struct rt_gpu_dev *d, bool *lost)
{
    uint64_t now = rt_mono_ns();
    bool read = false;
    if (gpu_nvml_spaced_due(&g->energy_q)) {
        unsigned long long mj;
        nvml_ret r = g->lib->energy(g->h, &mj);
        gpu_nvml_spaced_done(g, &g->energy_q);
        read = gpu_nvml_check(g, F_ENERGY, r, lost);
        if (*lost)
            return;
        if (read) {
            double j = (double)mj / 1000.0;
            if (!g->has_energy || j < g->energy_read_j)
                g->energy_j = j;
            g->has_energy = true;
            g->energy_read_j = j;
            g->energy_since_j = 0;
        }
    }
    if (!read && g->has_energy && d->has_power && g->energy_at_ns)
        g->energy_since_j += d->power_w * (double)(now - g->energy_at_ns) / 1e9;
    g->energy_at_ns = now;
    if (!g->has_energy)
        return;
    if (g->energy_read_j + g->energy_since_j > g->energy_j)
        g->energy_j = g->energy_read_j + g->energy_since_j;
    d->has_energy = true;
    d->energy_j = g->energy_j;
}

static enum gpu_status nv_poll(void *dev, struct rt_gpu_dev *d)
{
    struct nvml_gpu *g = dev;
    struct nvml_lib *lib = g->lib;
    if (ensure_handle(g) != GPU_OK)
        return GPU_LOST;
    bool lost = false;
    read_info(g, &lost);
    struct nvml_memory mem;
    if (!lost && gpu_nvml_wanted(g, F_MEMORY, lib->memory) &&
        gpu_nvml_check(g, F_MEMORY, lib->memory(g->h, &mem), &lost)) {
        d->vram_total = mem.total;
        d->vram_used = mem.used;
    }
    unsigned v;
    if (!lost && gpu_nvml_wanted(g, F_TEMP, lib->temperature) &&
        gpu_nvml_check(g, F_TEMP, lib->temperature(g->h, NVML_TEMPERATURE_GPU, &v), &lost)) {
        d->has_temperature = true;
        d->temperature_c = v;
    }
    if (!lost && gpu_nvml_wanted(g, F_POWER, lib->power) &&
        gpu_nvml_check(g, F_POWER, lib->power(g->h, &v), &lost)) {
        d->has_power = true;
        d->power_w = v / 1000.0;
    }
    if (!lost && gpu_nvml_wanted(g, F_CLOCK, lib->clock) &&
        gpu_nvml_check(g, F_CLOCK, lib->clock(g->h, NVML_CLOCK_GRAPHICS, &v), &lost)) {
        d->has_frequency = true;
        d->frequency_mhz = v;
    }
    if (!lost && gpu_nvml_wanted(g, F_ENERGY, lib->energy))
        read_energy(g, d, &lost);
    if (!lost) {
        bool c = read_list(g, F_COMPUTE, lib->compute_procs, lib->compute_stride, d, &lost);
        bool gr = !lost && read_list(g, F_GRAPHICS, lib->graphics_procs, lib->graphics_stride, d, &lost);
        d->has_procs = c || gr;
        merge_procs(d);
    }
    if (!lost)
        read_proc_util(g, d, &lost);
    if (!lost)
        gpu_nvml_poll_health(g, d, &lost);
    if (lost) {
        g->h = NULL; /* a new handle on recovery */
        g->have_info = false;
        return GPU_LOST;
    }
    for (size_t i = 0; i < d->n_procs; i++) {
        d->sm_total += d->procs[i].sm_pct;
        d->procs_vram += d->procs[i].vram_bytes;
    }
    snprintf(d->name, sizeof(d->name), "%s", g->name);
    snprintf(d->uuid, sizeof(d->uuid), "%s", g->uuid);
    snprintf(d->host_id, sizeof(d->host_id), "%u", g->index);
    snprintf(d->bus_id, sizeof(d->bus_id), "%s", g->bus_id);
    snprintf(d->driver_version, sizeof(d->driver_version), "%s", lib->driver);
    return GPU_OK;
}

static enum gpu_status nv_recover(void *dev)
{
    struct nvml_gpu *g = dev;
    g->h = NULL;
    g->have_info = false;
    g->energy_q.skip = g->mig_q.skip = 0; /* back after a reset, maybe with another MIG mode: ask at once */
    g->energy_at_ns = 0;
    return ensure_handle(g);
}

static const char *nv_last_error(void *dev) { return ((struct nvml_gpu *)dev)->err; }

static void nv_destroy(void *dev)
{
    struct nvml_gpu *g = dev;
    gpu_nvml_free_health(g);
    free(g->raw);
    free(g->samples);
    free(g->pages);
    free(g);
}

static const struct gpu_dev_ops nvml_ops = {
    .util = nv_util, .poll = nv_poll, .recover = nv_recover, .last_error = nv_last_error, .destroy = nv_destroy,
};

void gpu_nvml_discover(struct nvml_lib *lib, struct gpu_shared *sh)
{
    unsigned n = 0;
    nvml_ret r = lib->get_count(&n);
    if (r != NVML_SUCCESS) {
        rt_info("NVML: cannot count devices: %s", gpu_nvml_errstr(lib, r));
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        struct nvml_gpu *g = rt_xcalloc(1, sizeof(*g));
        g->lib = lib;
        g->index = i;
        g->interval_us = sh->interval_ns / 1000;
        uint64_t polls = sh->interval_ns ? GPU_SPACED_MAX_NS / sh->interval_ns : GPU_SPACED_POLLS; /* in 10 s */
        g->slow_skip = polls > GPU_SPACED_POLLS ? GPU_SPACED_POLLS - 1 : polls ? (unsigned)polls - 1 : 0;
        (void)ensure_handle(g); /* a device without a handle starts lost */
        gpu_shared_add_slot(sh, GPU_NVIDIA, i, &nvml_ops, g);
    }
}
