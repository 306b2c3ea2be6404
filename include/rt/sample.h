/* The sample model shared by collectors, writers, the daemon and the client.
 * Field names follow the JSON schema (docs/output.md); every pointer in a
 * sample points into the sample's arena. */
#ifndef RT_SAMPLE_H
#define RT_SAMPLE_H

#include "rt/arena.h"
#include "rt/job_figures.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_cpu {
    double utilization_pct;      /* busy host cores, 0..n_cores (not a percentage) */
    double *per_core_pct;        /* 0..100 each */
    size_t n_cores;
    double utime_secs;           /* user+nice CPU seconds in the interval, all cores */
    double stime_secs;           /* system CPU seconds in the interval */
    uint32_t process_count;      /* processes (not threads) on the host */
    bool has_cgroup;             /* root cgroup CPU counter found */
    double cgroup_utilization_pct;
    double cgroup_usage_secs;
};

struct rt_memory {
    uint64_t total_mib, free_mib, available_mib, used_mib;
    double used_pct;
    uint64_t buffers_mib, cached_mib;
    uint64_t swap_total_mib, swap_used_mib;
    double swap_used_pct;
    uint64_t active_mib, inactive_mib;
};

struct rt_mount {
    const char *mount_point;
    const char *filesystem;
    uint64_t total_bytes, used_bytes, available_bytes;
    double used_pct;
};

struct rt_disk {
    const char *device;
    const char *model, *vendor, *serial; /* NULL = unknown */
    const char *device_type;             /* "nvme" | "ssd" | "hdd" | NULL */
    bool has_capacity;
    uint64_t capacity_bytes;
    bool stacked;                        /* built on other devices (dm, md): not in I/O totals */
    struct rt_mount *mounts;
    size_t n_mounts;
    double read_bytes_per_sec, write_bytes_per_sec;
    uint64_t read_bytes_total, write_bytes_total;
};

struct rt_netif {
    const char *interface;
    const char *mac_address, *driver, *operstate; /* NULL = unknown */
    bool has_speed;
    int64_t speed_mbps;
    bool has_mtu;
    uint32_t mtu;
    double rx_bytes_per_sec, tx_bytes_per_sec;
    uint64_t rx_bytes_total, tx_bytes_total;
};

struct rt_kv {
    const char *key, *value;
};

struct rt_gpu {
    const char *uuid, *name, *host_id;
    const char *vendor;                 /* "nvidia" | "amd" */
    struct rt_kv *detail;
    size_t n_detail;
    double utilization_pct;             /* 0..100 */
    uint64_t vram_total_bytes, vram_used_bytes;
    double vram_used_pct;
    bool has_temperature;
    uint32_t temperature_celsius;
    bool has_power;
    double power_watts;
    bool has_frequency;
    uint32_t frequency_mhz;
    bool has_energy;
    double energy_joules;               /* cumulative counter of the device */
};

struct rt_sample {
    struct rt_arena arena;
    uint64_t timestamp_secs;             /* wall clock, floored */
    uint64_t timestamp_ms;               /* wall clock in ms: the CSV timestamp, unique per job */
    uint64_t host_timestamp_ms;          /* job samples: when their host part was taken (0 unknown) */
    bool host_repeated;                  /* job samples: the host part is that of the job's previous one */
    bool has_interval;
    uint64_t actual_interval_ms;         /* since the previous sample */
    double nominal_interval_secs;        /* used by CSV when has_interval is false */
    struct rt_cpu cpu;
    struct rt_memory memory;
    struct rt_disk *disks;
    size_t n_disks;
    struct rt_netif *nets;
    size_t n_nets;
    struct rt_gpu *gpus;
    size_t n_gpus;
    bool has_gpu_backend;                /* NVML loaded or amdgpu present */
    uint64_t job_id;                     /* 0 on host samples */
    const char *job_name;
    /* The job's figures (rt/job_figures.h): a job's sample has them all
     * (has_job); a host sample only the GPU ones, of the whole host, where
     * job.gates has RT_GATE_GPU. */
    bool has_job;
    int32_t tracked_pid;
    struct rt_job_figures job;
};

void rt_sample_init(struct rt_sample *s);
/* Drop all contents (keeps the arena's memory for the next tick). */
void rt_sample_reset(struct rt_sample *s);
void rt_sample_free(struct rt_sample *s);

/* Byte counts for the interval as CSV reports them: per device/interface
 * round(rate x interval), summed. Stacked disks are skipped. */
double rt_sample_interval_secs(const struct rt_sample *s);
/* round(rate x secs), the rate rounded as the JSON shows it; 0 if negative. */
uint64_t rt_sample_bytes_in(double rate, double secs);
uint64_t rt_sample_disk_read_bytes(const struct rt_sample *s);
uint64_t rt_sample_disk_write_bytes(const struct rt_sample *s);
uint64_t rt_sample_net_recv_bytes(const struct rt_sample *s);
uint64_t rt_sample_net_sent_bytes(const struct rt_sample *s);

#define RT_MIB (1024ULL * 1024ULL)

/* Decimal places kept in the output, per unit. The JSON and CSV writers
 * both round with these, so a CSV row made from a stored JSON sample equals
 * the row made from the live sample. */
#define RT_DEC_CORES 4
#define RT_DEC_PCT 2
#define RT_DEC_SECS 4
#define RT_DEC_RATE 1
#define RT_DEC_MIB 4
#define RT_DEC_WATTS 3

/* v rounded to decimals places (half away from zero); v itself when the
 * result would not be finite. */
double rt_round_dec(double v, int decimals);

#endif
