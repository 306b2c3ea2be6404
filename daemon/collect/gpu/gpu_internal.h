/* Internals of the GPU collector shared by gpu.c (threads, snapshots),
 * gpu_job.c (per-job attribution) and the vendor back ends gpu_nvml.c and
 * gpu_amd.c. Not for other modules. */
#ifndef RT_GPU_INTERNAL_H
#define RT_GPU_INTERNAL_H

#include "collect/gpu/gpu.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

enum gpu_vendor { GPU_NVIDIA, GPU_AMD };

/* What a back-end call reports about the device. */
enum gpu_status {
    GPU_OK,
    GPU_FAILED, /* this poll failed; try again next time */
    GPU_LOST,   /* the device is gone (GPU_IS_LOST, removed from sysfs) */
};

/* Copy a snapshot, keeping dst's process buffer (grown as needed). */
void gpu_data_copy(struct rt_gpu_dev *dst, const struct rt_gpu_dev *src);

/* Back-end operations on one device; called only from its worker thread. */
struct gpu_dev_ops {
    /* One instantaneous utilisation reading (averaged by the worker). */
    enum gpu_status (*util)(void *dev, double *pct);
    /* Everything else. out arrives zeroed except procs/n_procs, a buffer the
     * back end may reuse and grow. */
    enum gpu_status (*poll)(void *dev, struct rt_gpu_dev *out);
    /* Try to get a lost device back (new handle, reopened directory). */
    enum gpu_status (*recover)(void *dev);
    /* Why the last call failed, for the log. */
    const char *(*last_error)(void *dev);
    void (*destroy)(void *dev);
};

/* A device found at start, with what its worker last published. */
struct gpu_slot {
    enum gpu_vendor vendor;
    unsigned index; /* NVML index, or card number for AMD */
    const struct gpu_dev_ops *ops;
    void *dev;
    pthread_t thread;
    bool has_thread;
    char label[160]; /* "NVIDIA GPU 0 (GPU-…)" for log messages */
    /* Under gpu_shared.mu: */
    bool valid;             /* at least one poll published */
    bool lost;
    uint64_t busy_since_ns; /* a back-end call is running since (0: none) */
    bool hang_reported;
    bool reported_lost;     /* a GPU-lost record is out; the next publish sends "appeared" */
    uint64_t polls;
    struct rt_gpu_dev data;
    bool has_events;        /* registered for XID events */
    uint64_t xids;          /* XID events counted (the event thread) */
    uint32_t last_xid;
};

#define GPU_XID_RING 64

struct nvml_lib;

/* State shared by the collector and its threads; freed by the last one out,
 * so a thread stuck in a driver call can outlive the collector safely. */
struct gpu_shared {
    pthread_mutex_t mu;
    pthread_cond_t wake;      /* CLOCK_MONOTONIC; pollers sleep on it, signalled on stop */
    pthread_cond_t published; /* CLOCK_MONOTONIC; signalled on every publish */
    int refs;
    bool stop;
    bool discovered;
    bool has_backend;
    struct gpu_slot *slots;
    size_t n_slots;
    struct nvml_lib *nvml;
    pthread_t events_thread;  /* NVIDIA XID events */
    bool has_events_thread;
    struct rt_gpu_xid xid_ring[GPU_XID_RING]; /* the latest events, xid_seq counts all */
    uint64_t xid_seq;
    int sys_fd, proc_fd;
    char *nvml_path;
    uint64_t interval_ns, retry_ns, hang_ns;
    unsigned util_samples;
    bool disable_nvml, disable_amd;
};

void gpu_shared_unref(struct gpu_shared *sh);
/* Start the poller thread of a slot; called with sh->mu held (gpu_poller.c). */
void gpu_start_worker(struct gpu_shared *sh, struct gpu_slot *s);
/* The journal record (GPU appeared, or lost when lost_reason is set) of a
 * slot whose data is d; called without sh->mu (gpu_poller.c). */
void gpu_report(const struct gpu_slot *s, const struct rt_gpu_dev *d, const char *lost_reason);

static inline struct timespec gpu_mono_ts(uint64_t ns)
{
    return (struct timespec){.tv_sec = (time_t)(ns / 1000000000ULL), .tv_nsec = (long)(ns % 1000000000ULL)};
}

/* One job's use of one device during one call of rt_gpu_job_usage. */
struct gpu_job_acc {
    uint64_t vram;
    double sm_pct;    /* NVIDIA: sum over the job's processes */
    uint64_t gfx_ns;  /* AMD: engine time in the interval, per engine */
    bool matched;     /* NVIDIA: a job process is on the device */
    uint32_t mig_mask; /* NVIDIA: the MIG instances (index bits) its processes are in */
};

/* The sampler's copy of the snapshot, taken by rt_gpu_collect. */
struct gpu_view {
    bool visible; /* polled, not lost, not hung */
    enum gpu_vendor vendor;
    unsigned index;
    struct rt_gpu_dev data;
};

struct rt_gpu_collector {
    struct gpu_shared *sh;
    pthread_t discover_thread;
    bool has_discover_thread;
    int proc_fd;
    bool has_backend;
    struct gpu_view *view;
    size_t n_view;
    int32_t *pids; /* sorted copy of a job's pids */
    size_t pids_cap;
    struct gpu_job_acc *acc; /* per device, for one job */
    size_t acc_cap;
    char *fdinfo_buf;
    uint64_t xid_seen;       /* xid_seq of the ring as last taken */
    struct rt_gpu_xid xids[GPU_XID_RING]; /* events of the last rt_gpu_collect, for rt_gpu_take_xids */
    size_t n_xids;
};
/* Add a discovered device (discovery thread, before workers start). */
struct gpu_slot *gpu_shared_add_slot(struct gpu_shared *sh, enum gpu_vendor v, unsigned index,
                                     const struct gpu_dev_ops *ops, void *dev);

/* NVML back end (gpu_nvml.c). Load and initialise the library; NULL when it
 * is absent or does not initialise (logged once, at debug/info level). */
struct nvml_lib *gpu_nvml_open(const char *path);
/* Add a slot per NVML device. */
void gpu_nvml_discover(struct nvml_lib *lib, struct gpu_shared *sh);
/* Start the XID event thread once every slot is there (gpu_nvml_events.c). */
void gpu_nvml_start_events(struct nvml_lib *lib, struct gpu_shared *sh);
void gpu_nvml_close(struct nvml_lib *lib);

/* AMD back end (gpu_amd.c): add a slot per amdgpu card under sys; its
 * processes are found through debugfs and read under proc. */
void gpu_amd_discover(int sys_fd, int proc_fd, struct gpu_shared *sh);

/* Every process on an AMD card, from debugfs and fdinfo (gpu_amd_procs.c),
 * pushed into d in pid order of the clients list. */
struct gpu_amd_procs;
struct gpu_amd_procs *gpu_amd_procs_new(void);
void gpu_amd_procs_free(struct gpu_amd_procs *st);
void gpu_amd_procs_read(struct gpu_amd_procs *st, int sys_fd, int proc_fd, unsigned card, const char *pci,
                        struct rt_gpu_dev *d, void (*push)(struct rt_gpu_dev *, const struct rt_gpu_proc *));

/* One DRM client from a /proc/PID/fdinfo file. */
struct gpu_amd_fdinfo {
    uint64_t client_id;
    char pdev[32];
    bool has_vram;
    uint64_t vram_bytes;
    bool has_gfx;
    uint64_t gfx_ns;
    uint64_t gfx_capacity; /* engines behind drm-engine-gfx, >= 1 */
};
/* true for an amdgpu client with a client id and a pdev. */
bool gpu_amd_parse_fdinfo(const char *text, struct gpu_amd_fdinfo *out);

/* A job's AMD DRM clients (gpu_fdinfo.c). */
struct gpu_fdinfo_state;
struct gpu_fdinfo_state *gpu_fdinfo_new(void);
void gpu_fdinfo_free(struct gpu_fdinfo_state *st);
/* Add the job's VRAM and gfx time per device to c->acc (pids sorted). */
void gpu_fdinfo_scan(struct rt_gpu_collector *c, struct gpu_fdinfo_state *st, const int32_t *pids, size_t npids);

#endif
