/* The NVIDIA back end's own declarations, shared by gpu_nvml.c (the library,
 * devices, processes), gpu_nvml_health.c (MIG, ECC, pages, clocks event
 * reasons, GPM) and gpu_nvml_events.c (the XID event thread). The few NVML
 * types used are declared here: nvml.h is non-free and not needed. */
#ifndef RT_GPU_NVML_H
#define RT_GPU_NVML_H

#include "collect/gpu/gpu_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* nvmlReturn_t values we act on. */
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_GPU_NOT_FOUND = 28,
};
#define NVML_TEMPERATURE_GPU 0
#define NVML_CLOCK_GRAPHICS 0
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)
#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_PAGE_RETIREMENT_CAUSE_SBE 0 /* multiple single-bit ECC errors */
#define NVML_PAGE_RETIREMENT_CAUSE_DBE 1 /* a double-bit ECC error */
#define NVML_EVENT_TYPE_XID 0x8ULL       /* nvmlEventTypeXidCriticalError */
/* nvmlClocksEventReason* (formerly ClocksThrottleReason*) bits. */
#define NVML_REASON_SW_POWER_CAP 0x4ULL
#define NVML_REASON_HW_SLOWDOWN 0x8ULL
#define NVML_REASON_SW_THERMAL 0x20ULL
#define NVML_REASON_HW_THERMAL 0x40ULL
#define NVML_REASON_HW_POWER_BRAKE 0x80ULL
/* nvmlGpmMetricId_t values used. */
#define NVML_GPM_METRIC_SM_UTIL 2
#define NVML_GPM_METRIC_SM_OCCUPANCY 3
#define NVML_GPM_METRIC_ANY_TENSOR_UTIL 5
#define NVML_GPM_METRIC_DRAM_BW_UTIL 10
#define NVML_GPM_METRICS_GET_VERSION 1
#define NVML_GPM_SUPPORT_VERSION 1

typedef int nvml_ret;
typedef struct nvml_device *nvml_dev_t;
typedef struct nvml_event_set *nvml_event_set_t;
typedef struct nvml_gpm_sample *nvml_gpm_sample_t;

struct nvml_utilization { unsigned gpu, memory; };
struct nvml_memory { unsigned long long total, free, used; };
/* nvmlProcessInfo_v1_t (plain names) and nvmlProcessInfo_v2_t (_v2, and _v3 of
 * most drivers). _v3 of drivers 535.43-535.86 writes a 32-byte entry (v2 plus
 * usedGpuCcProtectedMemory) without a version bump, so _v2 is preferred and
 * list buffers are sized for the longest entry. */
struct nvml_process_v1 { unsigned pid; unsigned long long used_gpu_memory; };
struct nvml_process_v2 { unsigned pid; unsigned long long used_gpu_memory; unsigned gpu_instance_id, compute_instance_id; };
#define NVML_PROCESS_MAX_SIZE 32
struct nvml_proc_util { unsigned pid; unsigned long long timestamp_us; unsigned sm, mem, enc, dec; };
/* nvmlPciInfo_t of _v2/_v3; the v1 struct shares the first 16 bytes (busId) and is shorter. */
struct nvml_pci_info {
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
};
/* nvmlEventData_t of nvmlEventSetWait_v2; the plain name writes the first 24 bytes. */
struct nvml_event_data {
    nvml_dev_t device;
    unsigned long long event_type, event_data;
    unsigned gpu_instance_id, compute_instance_id;
};
struct nvml_gpm_support { unsigned version, is_supported; };
struct nvml_gpm_metric {
    unsigned metric_id;
    nvml_ret ret;
    double value;
    const char *short_name, *long_name, *unit;
};
/* nvmlGpmMetricsGet_t; the driver reads num_metrics entries of metrics[]. */
struct nvml_gpm_metrics_get {
    unsigned version, num_metrics;
    nvml_gpm_sample_t sample1, sample2;
    struct nvml_gpm_metric metrics[98];
};

typedef nvml_ret (*proc_list_fn)(nvml_dev_t, unsigned *, void *);

struct nvml_lib {
    void *so;
    nvml_ret (*init)(void);
    nvml_ret (*shutdown)(void);
    const char *(*error_string)(nvml_ret);
    nvml_ret (*get_count)(unsigned *);
    nvml_ret (*get_handle)(unsigned, nvml_dev_t *);
    nvml_ret (*driver_version)(char *, unsigned);
    nvml_ret (*name)(nvml_dev_t, char *, unsigned);
    nvml_ret (*uuid)(nvml_dev_t, char *, unsigned);
    nvml_ret (*pci)(nvml_dev_t, struct nvml_pci_info *);
    bool pci_v1;
    nvml_ret (*utilization)(nvml_dev_t, struct nvml_utilization *);
    nvml_ret (*memory)(nvml_dev_t, struct nvml_memory *);
    nvml_ret (*temperature)(nvml_dev_t, int, unsigned *);
    nvml_ret (*power)(nvml_dev_t, unsigned *);
    nvml_ret (*clock)(nvml_dev_t, int, unsigned *);
    nvml_ret (*energy)(nvml_dev_t, unsigned long long *);
    proc_list_fn compute_procs, graphics_procs;
    size_t compute_stride, graphics_stride;
    nvml_ret (*proc_util)(nvml_dev_t, struct nvml_proc_util *, unsigned *, unsigned long long);
    /* MIG */
    nvml_ret (*mig_mode)(nvml_dev_t, unsigned *, unsigned *);
    nvml_ret (*mig_count)(nvml_dev_t, unsigned *);
    nvml_ret (*mig_handle)(nvml_dev_t, unsigned, nvml_dev_t *);
    nvml_ret (*gi_id)(nvml_dev_t, unsigned *);
    nvml_ret (*ci_id)(nvml_dev_t, unsigned *);
    /* health */
    nvml_ret (*ecc)(nvml_dev_t, int, int, unsigned long long *);
    nvml_ret (*retired)(nvml_dev_t, int, unsigned *, unsigned long long *);
    nvml_ret (*remapped)(nvml_dev_t, unsigned *, unsigned *, unsigned *, unsigned *);
    nvml_ret (*reasons)(nvml_dev_t, unsigned long long *);
    /* events */
    nvml_ret (*event_set_create)(nvml_event_set_t *);
    nvml_ret (*event_set_free)(nvml_event_set_t);
    nvml_ret (*register_events)(nvml_dev_t, unsigned long long, nvml_event_set_t);
    nvml_ret (*event_wait)(nvml_event_set_t, struct nvml_event_data *, unsigned);
    /* GPM */
    nvml_ret (*gpm_support)(nvml_dev_t, struct nvml_gpm_support *);
    nvml_ret (*gpm_alloc)(nvml_gpm_sample_t *);
    nvml_ret (*gpm_free)(nvml_gpm_sample_t);
    nvml_ret (*gpm_get)(nvml_dev_t, nvml_gpm_sample_t);
    nvml_ret (*gpm_mig_get)(nvml_dev_t, unsigned, nvml_gpm_sample_t);
    nvml_ret (*gpm_metrics)(struct nvml_gpm_metrics_get *);
    char driver[80];
};

/* Fields that degrade on their own. */
enum field {
    F_UTIL, F_MEMORY, F_TEMP, F_POWER, F_CLOCK, F_ENERGY, F_COMPUTE, F_GRAPHICS, F_PROC_UTIL, F_INFO,
    F_MIG, F_ECC, F_RETIRED, F_REMAPPED, F_REASONS, F_GPM, F_COUNT
};

/* A query of a figure that changes slowly (the energy counter; MIG mode
 * while it is off): asked every poll while it costs the poller little;
 * after an answer took more CPU than GPU_SLOW_QUERY_NS, every
 * GPU_SPACED_POLLS-th poll but never further apart than GPU_SPACED_MAX_NS
 * (with a long interval, every poll). Some drivers take milliseconds. */
#define GPU_SLOW_QUERY_NS 200000u
#define GPU_SPACED_POLLS 10u
#define GPU_SPACED_MAX_NS 10000000000ull
struct nvml_spaced {
    unsigned skip;  /* polls left before the next query */
    uint64_t cpu0;  /* the poller's CPU time when the query began */
};

/* Two GPM samples of a device or MIG instance: metrics come from the pair. */
struct nvml_gpm_pair {
    nvml_gpm_sample_t prev, cur;
    bool has_prev;
    uint32_t gi; /* the instance they belong to (MIG) */
};

struct nvml_gpu {
    struct nvml_lib *lib;
    unsigned index;
    nvml_dev_t h;                     /* NULL until a handle is obtained */
    unsigned unsupported;             /* bit per field: stop asking */
    bool logged[F_COUNT];             /* unexpected errors, logged once per field */
    unsigned long long last_seen_us;  /* newest process-utilisation sample seen */
    uint64_t interval_us;
    void *raw;                        /* process list buffer */
    size_t raw_cap;                   /* entries, at the larger stride */
    struct nvml_proc_util *samples;
    size_t samples_cap;
    unsigned long long *pages;        /* retired page addresses (only counted) */
    size_t pages_cap;
    char name[96], uuid[96], bus_id[32];
    bool have_info;
    unsigned slow_skip;               /* polls a slow query skips (GPU_SPACED_*) */
    /* energy: the last counter reading, plus power x time since while the
     * counter is spaced or fails; what was published last (never less) */
    struct nvml_spaced energy_q;
    bool has_energy;
    double energy_read_j, energy_since_j, energy_j;
    uint64_t energy_at_ns;
    struct nvml_spaced mig_q;
    bool mig_on;
    /* clocks event reasons, integrated between polls */
    uint64_t reasons_at_ns;
    uint64_t reasons;
    double throttle_secs[RT_GPU_THROTTLE_N];
    /* GPM: the device's pair, then one per MIG instance */
    bool gpm_checked, gpm_ok;
    struct nvml_gpm_pair gpm, gpm_mig[RT_GPU_MAX_MIG];
    char err[96];
};

/* gpu_nvml.c: classify a field's result, true on success. NOT_SUPPORTED,
 * NO_PERMISSION and FUNCTION_NOT_FOUND switch the field off for good; other
 * errors are logged once per field; a lost GPU sets *lost. */
bool gpu_nvml_check(struct nvml_gpu *g, enum field f, nvml_ret r, bool *lost);
/* The field is still asked for and its symbol exists. */
bool gpu_nvml_wanted(const struct nvml_gpu *g, enum field f, const void *fn);
/* A spaced query is due this poll (then call gpu_nvml_spaced_done after it). */
bool gpu_nvml_spaced_due(struct nvml_spaced *q);
void gpu_nvml_spaced_done(const struct nvml_gpu *g, struct nvml_spaced *q);
const char *gpu_nvml_errstr(const struct nvml_lib *lib, nvml_ret r);

/* gpu_nvml_health.c: MIG instances, ECC, pages, clocks event reasons and GPM
 * into d (after the process lists); resolve their symbols; free GPM samples. */
void gpu_nvml_resolve_health(struct nvml_lib *lib, void *so);
void gpu_nvml_poll_health(struct nvml_gpu *g, struct rt_gpu_dev *d, bool *lost);
void gpu_nvml_free_health(struct nvml_gpu *g);

#endif
