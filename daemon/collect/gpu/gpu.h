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
