/* GPUs: NVIDIA through NVML (dlopen'ed at run time) and AMD through sysfs and
 * /proc/PID/fdinfo. Vendor calls run on the collector's own threads (one per
 * device), which publish snapshots; the sampler only copies the latest
 * snapshot, so a hung or failing GPU never stalls a tick. See docs/gpu.md. */
#ifndef RT_GPU_H
#define RT_GPU_H

#include "collect/roots.h"
#include "rt/sample.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_gpu_options {
    const char *nvml_library;   /* NULL: "libnvidia-ml.so.1" from the loader's search path */
    double poll_interval_secs;  /* device poll period; <= 0: 1 s */
    unsigned util_samples;      /* utilisation readings averaged per poll; 0: 4 */
    double hang_bound_secs;     /* a call running longer marks the device lost; <= 0: 2 polls, at least 1 s */
    double retry_secs;          /* lost devices are retried this often; <= 0: 10 s */
    double start_wait_secs;     /* rt_gpu_collector_new waits this long for the first poll; < 0: none, 0: hang bound */
    bool disable_nvml, disable_amd;
};

/* ---- what the pollers read of each device (also the ownership view's input) ---- */

#define RT_GPU_NO_ID UINT32_MAX /* a MIG id of a process or event outside MIG */
#define RT_GPU_MAX_MIG 8

/* One process on a device: NVML's process lists, or an AMD DRM client found
 * through debugfs and its fdinfo. */
struct rt_gpu_proc {
    int32_t pid;
    uint64_t vram_bytes;
    bool has_sm;          /* its use is known (NVML process utilisation, AMD gfx time) */
    double sm_pct;        /* mean use over the poll, 0..100 */
    uint32_t gi, ci;      /* its MIG GPU and compute instance, RT_GPU_NO_ID without MIG */
};

/* GPM figures over the last poll (Hopper and later), 0..100; present false
 * where the device or instance has none. */
struct rt_gpu_gpm {
    bool present;
    double sm_active, sm_occupancy, tensor_active, dram_bw;
};

struct rt_gpu_mig {
    char uuid[96];
    uint32_t gi, ci;
    bool has_memory;
    uint64_t vram_total, vram_used;
    struct rt_gpu_gpm gpm;
};

/* Why clocks were held down, as the time spent per reason. */
enum rt_gpu_throttle { RT_GPU_THROTTLE_POWER, RT_GPU_THROTTLE_THERMAL, RT_GPU_THROTTLE_HW_SLOWDOWN, RT_GPU_THROTTLE_N };

/* Health counters; each has_* is false where the device does not give it. */
struct rt_gpu_health {
    bool has_ecc;
    uint64_t ecc_corrected, ecc_uncorrected;   /* volatile totals (since the driver loaded) */
    bool has_retired;
    uint32_t retired_sbe, retired_dbe;          /* pages retired for single- and double-bit errors */
    bool has_remapped;
    uint32_t remapped_corr, remapped_unc;       /* rows remapped for corrected, uncorrected errors */
    bool remap_pending, remap_failure;
    bool has_reasons;
    uint64_t reasons;                           /* current clocks event reasons (NVML bits) */
    double throttle_secs[RT_GPU_THROTTLE_N];    /* time held down per reason since the poller started */
    bool has_events;                            /* XID events are watched */
    uint64_t xids;                              /* XID events since the collector started */
    uint32_t last_xid;
};

/* A device as one poll saw it. */
struct rt_gpu_dev {
    char name[96], uuid[96], host_id[32], bus_id[32], driver_version[80];
    bool has_util;       /* the device reports its use (NVML does not with MIG on) */
    double util_pct;
    uint64_t vram_total, vram_used;
    bool has_temperature;
    uint32_t temperature_c;
    bool has_power;
    double power_w;
    bool has_frequency;
    uint32_t frequency_mhz;
    bool has_energy; /* the driver's own counter */
    double energy_j;
    bool has_energy_est; /* counter, else power integrated by the poller: for attribution */
    double energy_est_j;
    bool has_procs;      /* process list available (NVML; AMD through debugfs) */
    bool has_proc_util;  /* per-process use available */
    double sm_total;     /* sum of sm_pct over procs */
    uint64_t procs_vram; /* sum of vram_bytes over procs */
    struct rt_gpu_proc *procs; /* heap, sorted by pid */
    size_t n_procs, procs_cap;
    struct rt_gpu_gpm gpm;
    bool mig_enabled;
    size_t n_mig;
    struct rt_gpu_mig mig[RT_GPU_MAX_MIG];
    struct rt_gpu_health health;
};

/* A visible device of the last rt_gpu_collect, valid until the next one. */
struct rt_gpu_devref {
    bool nvidia;
    unsigned index;   /* NVML index, or card number */
    const struct rt_gpu_dev *d;
};

/* An XID error reported by the driver. */
struct rt_gpu_xid {
    unsigned index;   /* the device's NVML index */
    char uuid[96];
    uint32_t xid;
    uint32_t gi, ci;  /* the MIG instance, RT_GPU_NO_ID when not known */
    double at;        /* Unix seconds */
};

struct rt_gpu_collector;

/* Never fails: a host without GPUs (or without the library, or with a driver
 * that does not initialise) gives a collector that reports no backend. r is
 * only used during the call (its fds are duplicated); o may be NULL. */
struct rt_gpu_collector *rt_gpu_collector_new(const struct rt_roots *r, const struct rt_gpu_options *o);
/* Stops the threads; one stuck in a driver call is detached, not waited for. */
void rt_gpu_collector_free(struct rt_gpu_collector *c);

/* Sampler thread, once per tick: fills s->gpus (in the arena), s->n_gpus,
 * s->has_gpu_backend and the GPU figures of s->job with host-wide values
 * (present only with a backend). Lost or hung devices are left out. */
void rt_gpu_collect(struct rt_gpu_collector *c, struct rt_sample *s);
/* Sampler thread: whether the last rt_gpu_collect found a backend. */
bool rt_gpu_has_backend(const struct rt_gpu_collector *c);
/* Sampler thread, after rt_gpu_collect: its visible devices into out (at
 * most max); the count. */
size_t rt_gpu_devices(const struct rt_gpu_collector *c, struct rt_gpu_devref *out, size_t max);
/* Sampler thread: XID events that arrived since the previous call (at most
 * max; more are counted in the devices' health but not returned). */
size_t rt_gpu_take_xids(struct rt_gpu_collector *c, struct rt_gpu_xid *out, size_t max);

/* Per-job state: fdinfo engine-time baselines, energy baselines and the
 * running totals behind the job summary. */
struct rt_gpu_job;
struct rt_gpu_job *rt_gpu_job_new(void);
void rt_gpu_job_free(struct rt_gpu_job *j);

/* GPU use of a job's processes over an interval. */
struct rt_process_gpu {
    bool present;               /* the host has a GPU backend */
    double usage;               /* fractional GPUs */
    double vram_mib;
    uint32_t utilized;          /* GPUs in use */
    /* The health of the GPUs in use over the interval (counted from the
     * job's second call on a GPU); each has_* is false where none of them
     * gives it. */
    bool has_xids, has_ecc, has_pages, has_clocks, has_gpm;
    uint32_t xids, ecc_corrected, ecc_uncorrected;
    uint32_t pages;             /* retired pages and remapped rows */
    double clocks_held_secs[RT_GPU_THROTTLE_N];
    double gpm_sm_active, gpm_sm_occupancy, gpm_tensor_active, gpm_dram_bw; /* mean over its GPUs, % */
    bool stalled;               /* one of them busy but stalled (use >= 90 %, SM activity < 5 %) */
};

/* Sampler thread, after rt_gpu_collect of the same tick: GPU use of the job's
 * processes (pids, any order) over its interval, into out; updates j's totals. */
void rt_gpu_job_usage(struct rt_gpu_collector *c, struct rt_gpu_job *j, const int32_t *pids, size_t npids,
                      double interval_secs, struct rt_process_gpu *out);

struct rt_gpu_job_summary {
    bool present;               /* the job was ever sampled on a host with a GPU backend */
    uint64_t samples;
    uint64_t peak_vram_bytes;   /* largest VRAM held at once, all devices */
    double avg_usage;           /* fractional GPUs, time-weighted mean over the job */
    double max_usage;
    bool has_energy;            /* some device in use had an energy source */
    double energy_joules;       /* the job's share of device energy (docs/gpu.md) */
    size_t n_gpus;              /* devices the job ever used */
    const char *const *gpu_uuids; /* owned by the job state, valid until its next update */
};

void rt_gpu_job_summary(const struct rt_gpu_job *j, struct rt_gpu_job_summary *out);

/* For tests and diagnostics: wait until every device that is not lost has
 * completed n more polls. false on timeout. */
bool rt_gpu_collector_wait_polls(struct rt_gpu_collector *c, unsigned n, double timeout_secs);

#endif
