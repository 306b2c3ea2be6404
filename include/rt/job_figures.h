/* A job's figures, each described once (common/job_figures.c):
 *   struct rt_job_figures   what one sample of the job measured;
 *   struct rt_job_summary   the job's totals, summed from its samples by one
 *                           rule (daemon/jobs/summary.c).
 * A row of rt_fig_samples says how a sample's figure is stored, shown in the
 * JSON sample and the CSV row and in Job.current; a row of rt_fig_totals how
 * the totals combine it and how people, Prometheus and the journal name it.
 * Writers and readers loop over the rows; docs/development.md says how to
 * add a figure. */
#ifndef RT_JOB_FIGURES_H
#define RT_JOB_FIGURES_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Gates: a gated figure is there (not null) only where its gate is on. The
 * bits are stored with each sample: never renumber them. */
#define RT_GATE_GPU 0x1u         /* the host has a GPU backend */
#define RT_GATE_GPU_ENERGY 0x2u  /* and its GPUs count energy */
#define RT_GATE_TREE 0x4u        /* the job's processes were read one by one (a process tree) */
#define RT_GATE_DISK 0x8u        /* its storage I/O is known */
#define RT_GATE_MEM 0x10u        /* its memory (mem_bytes) is known */
#define RT_GATE_HWM 0x20u        /* its processes' high-water marks were read */
#define RT_GATE_CG_MEM 0x40u     /* its cgroup's memory.current */
#define RT_GATE_CG_STAT 0x80u    /* its cgroup's memory split (memory.stat) */
#define RT_GATE_CG_PEAK 0x100u   /* its cgroup's memory peak (memory.peak, max_usage_in_bytes) */
#define RT_GATE_OOM 0x200u       /* the kernel's OOM kills in its (memory-limited) cgroup */
#define RT_GATE_PSI 0x400u       /* pressure stall information of its cgroup */
#define RT_GATE_THROTTLE 0x800u  /* throttling by its CPU quota */
#define RT_GATE_GPU_XID 0x1000u  /* XID events of the GPUs it used are watched (NVML) */
#define RT_GATE_GPU_ECC 0x2000u  /* their ECC error counts are known */
#define RT_GATE_GPU_PAGES 0x4000u /* their retired pages or remapped rows are known */
#define RT_GATE_GPU_CLOCKS 0x8000u /* why their clocks are held down is known */
#define RT_GATE_GPM 0x10000u     /* their GPM metrics (Hopper and later) */
#define RT_NGATES 17
/* Records stored before TREE and DISK were gates had them. */
#define RT_GATES_FIRST_RECORDS (RT_GATE_TREE | RT_GATE_DISK)

/* One sample of a job as it is stored: everything its totals need. Values
 * have the precision the sample shows (cores, times and GPU use to 4
 * decimals, the energy share to 6). */
struct rt_job_figures {
    uint64_t interval_ms;          /* span of the sample (actual_interval_ms) */
    uint32_t gates;                /* RT_GATE_* on in this sample */
    uint32_t child_count;
    double cores_used;
    double utime_secs, stime_secs; /* in the interval */
    uint64_t rss_bytes, pss_bytes;
    uint64_t disk_read_bytes, disk_write_bytes; /* in the interval */
    double gpu_usage;              /* fractional GPUs */
    uint32_t gpu_utilized;         /* GPUs in use */
    uint64_t gpu_vram_bytes;
    double gpu_energy_joules;      /* the job's share of device energy in the interval */
    /* Memory: what the job holds that cannot be reclaimed (a cgroup's anon +
     * shmem + kernel; a tree's PSS), and the largest high-water mark of a
     * tree's live processes (VmHWM). */
    uint64_t mem_bytes, mem_hwm_bytes;
    /* A cgroup job's cgroup: memory now, its split and its peak. */
    uint64_t cg_mem_bytes, cg_anon_bytes, cg_file_bytes, cg_shmem_bytes, cg_kernel_bytes, cg_peak_bytes;
    uint32_t oom_kills;            /* in the interval */
    /* Per cent of the interval stalled (PSI), and of CPU periods throttled. */
    double psi_cpu_some, psi_mem_some, psi_mem_full, psi_io_some, psi_io_full;
    double throttled_pct;
    /* Its GPUs: how many are idle but held or given and unused now; in the
     * interval, on the GPUs it used: XID errors, ECC errors, pages retired
     * and rows remapped, seconds their clocks were held down per reason;
     * GPM (their mean, per cent) and whether one was busy but stalled (100). */
    uint32_t gpu_idle;
    uint32_t gpu_xids, gpu_ecc_corrected, gpu_ecc_uncorrected, gpu_pages;
    double gpu_held_power_secs, gpu_held_thermal_secs, gpu_held_hw_secs;
    double gpm_sm_active, gpm_sm_occupancy, gpm_tensor_active, gpm_dram_bw, gpu_stalled_pct;
};

/* A job's totals. */
struct rt_job_summary {
    uint64_t samples;              /* stored samples */
    uint32_t gates;                /* gates on in any sample */
    double gate_secs[RT_NGATES];   /* seconds sampled with each gate on */
    uint64_t unknown;              /* bit per rt_fig_totals row: lost to a record from before it */
    double cpu_secs;
    double peak_cores;             /* highest cores_used of a sample */
    double sustained_cores;        /* highest mean cores of a block (RT_RULE_SUSTAINED) */
    double block_core_secs, block_secs; /* the block in progress: not recorded, begun anew after a restart */
    uint32_t peak_children;
    uint64_t peak_rss_bytes, peak_pss_bytes;
    uint64_t disk_read_bytes, disk_write_bytes;
    double gpu_usage_secs;         /* fractional GPUs x seconds */
    uint64_t gpu_peak_vram_bytes;
    double gpu_energy_joules;
    double pss_sum_bytes;          /* sums for means */
    double gpu_peak_usage;
    double gpu_vram_sum_bytes;
    uint64_t memory_peak_bytes, cgroup_memory_peak_bytes;
    uint64_t oom_kills;
    double psi_cpu_some_secs, psi_mem_some_secs, psi_mem_full_secs, psi_io_some_secs, psi_io_full_secs;
    double throttled_secs;         /* per cent x seconds, as the means' weights */
    double gpu_held_secs;          /* GPUs in use x seconds */
    double memory_byte_secs;       /* memory x seconds */
    double gpu_idle_secs;          /* GPUs idle but held (or given and unused) x seconds */
    uint64_t gpu_xid_errors, gpu_ecc_corrected, gpu_ecc_uncorrected, gpu_pages;
    double gpu_held_power_secs, gpu_held_thermal_secs, gpu_held_hw_secs;
    double gpm_sm_active_secs, gpm_sm_occupancy_secs, gpm_tensor_active_secs, gpm_dram_bw_secs;
    double gpu_stalled_secs;       /* per cent x seconds */
    struct json_object *gpus;      /* UUIDs of the GPUs the job used (array), or NULL */
};

enum rt_fig_type { RT_FT_U32, RT_FT_U64, RT_FT_F64 };

enum rt_fig_unit { RT_UNIT_COUNT, RT_UNIT_BYTES, RT_UNIT_SECS, RT_UNIT_CORES, RT_UNIT_GPUS, RT_UNIT_JOULES, RT_UNIT_PCT };

/* How a sample shows a value: in the JSON sample and the CSV row alike. */
enum rt_fig_show {
    RT_SHOW_INT,                   /* the integer */
    RT_SHOW_DEC,                   /* to `decimals` places */
    RT_SHOW_MIB,                   /* bytes as whole MiB, rounded down */
    RT_SHOW_MIB_DEC,               /* bytes as MiB to `decimals` places */
};

/* Job.current: the figure of the latest sample, or its rate per second. */
enum rt_fig_now { RT_NOW_NONE, RT_NOW_VALUE, RT_NOW_RATE };

struct rt_fig_sample {
    const char *name;              /* its member; also the name to look it up by */
    enum rt_fig_type type;
    size_t off;                    /* in struct rt_job_figures */
    uint32_t gate;                 /* RT_GATE_* it needs, 0 for none */
    enum rt_fig_unit unit;
    unsigned slot;                 /* its number in a stored record */
    int places;                    /* kept to this many decimals (stored x 10^places) */
    /* In a sample: the key in its "cpu" object and the CSV column (1-based),
     * NULL/0 where samples do not show it. */
    const char *json;
    unsigned csv;
    enum rt_fig_show show;
    int decimals;
    /* In Job.current, and its Prometheus gauge. */
    const char *now;
    enum rt_fig_now now_form;
    int now_decimals;
    const char *prom_now, *prom_now_help;
};

enum rt_fig_rule {
    RT_RULE_SUM,                   /* added up */
    RT_RULE_PEAK,                  /* the largest of a sample */
    RT_RULE_MEAN,                  /* the mean of the samples (their sum is kept) */
    RT_RULE_TIME_MEAN,             /* weighted by each sample's span over the time its gate was on */
    RT_RULE_PER_SEC,               /* another total over the job's duration (not summed itself) */
    RT_RULE_SUSTAINED,             /* the highest mean over a block of RT_SUSTAINED_BLOCK_SECS (cores a phase held) */
};

struct rt_fig_total {
    const char *key;               /* in Job.summary ("a.b": b in its object a); the name to look it up by */
    const char *record;            /* in the job record's totals when not key: the sum of a mean */
    enum rt_fig_rule rule;
    int src, src2;                 /* rt_fig_samples rows it is made of, or -1: a sum adds src2 to src, a
                                      peak takes the larger; it is there when either is */
    const char *of;                /* RT_RULE_PER_SEC: the total it is the rate of */
    const char *at_least;          /* shown never below this total (the whole job is a span too) */
    enum rt_fig_type type;
    size_t off;                    /* in struct rt_job_summary */
    int decimals;                  /* in Job.summary, for real numbers */
    bool later;                    /* records of older daemons may lack it: null for their jobs */
    enum rt_fig_unit unit;
    const char *label;             /* for people, in a sentence: "peak PSS" */
    const char *stat, *title;      /* in `report`/`recommend` statistics: name and row title, or NULL */
    const char *prom, *prom_type, *prom_help;  /* its family in `metrics`, or NULL */
    const char *journal;           /* field of the job-finished record, or NULL */
    double journal_scale;          /* its value x this (CPU_USAGE_NSEC: 1e9) */
    int journal_decimals;          /* -1: an integer */
    const char *journal_text;      /* the same for people ("CPU_USAGE") */
};

extern const struct rt_fig_sample rt_fig_samples[];
extern const size_t rt_fig_nsamples;
extern const struct rt_fig_total rt_fig_totals[];
extern const size_t rt_fig_ntotals;

/* Gates by bit position: their keys in the job record, of the gate and of the
 * seconds sampled with it (for time-weighted means), and whether a record
 * from before the key existed had the gate. */
struct rt_fig_gate {
    const char *record, *secs_record;
    bool implied;
};
extern const struct rt_fig_gate rt_fig_gates[RT_NGATES];

/* Rows by name: the index, or -1. */
int rt_fig_sample_find(const char *name);
int rt_fig_total_find(const char *key);

/* A total as Job.summary shows it, for a job of that duration; false when
 * it is null (its gate never on, or lost to a record from before it). */
bool rt_fig_total_value(const struct rt_job_summary *s, size_t row, double duration_secs, double *v);
/* Seconds sampled with a gate on (its lowest bit's). */
double rt_fig_gate_secs(const struct rt_job_summary *s, uint32_t gate);
/* Minimum span of a cores figure: CPU time moves in clock ticks (10 ms),
 * cores are measured over at least ten of them. */
#define RT_CORES_MIN_SPAN_SECS 0.1

/* Sustained cores: consecutive samples are taken in blocks of at least this
 * many seconds from the job's start, and the highest mean cores of a block
 * kept, so a phase of twice as long or more is seen at its level (one
 * block lies inside it) while a one-sample spike is not. A sample of
 * value v (cores) and span secs added to the block of *core_secs over
 * *secs; *peak grows when a block is complete. */
#define RT_SUSTAINED_BLOCK_SECS 5.0
void rt_fig_sustained_add(double *core_secs, double *secs, double *peak, double v, double span);

/* A total in a Job.summary object by its key ("a.b" is b of its object a):
 * put one there (v taken), and get it (false when absent or null). */
void rt_fig_summary_put(struct json_object *summary, const char *key, struct json_object *v);
bool rt_fig_summary_get(struct json_object *summary, const char *key, double *v);

/* A member as a double, and set from one (rounded to the member's type). */
double rt_fig_get(const void *base, enum rt_fig_type type, size_t off);
void rt_fig_set(void *base, enum rt_fig_type type, size_t off, double v);
/* A whole-number figure from a double, kept in range (2^64 and above, as
 * a u64 near its top reads back as a double, is UINT64_MAX; below 0, 0). */
uint64_t rt_fig_u64(double v);

/* A sample's figure; false when its gate is off. In a sample
 * (rt_sample), with has_job false (a host sample), only the gated ones can
 * be there. */
bool rt_fig_sample_value(const struct rt_job_figures *f, size_t row, double *v);
bool rt_fig_sample_in(const struct rt_job_figures *f, bool has_job, size_t row, double *v);
/* The value as the sample shows it (in its unit: bytes shown as MiB are
 * whole or rounded MiB times 2^20), as a JSON value and as JSON text
 * (NUL-terminated; its length). */
double rt_fig_shown(const struct rt_fig_sample *row, double v);
struct json_object *rt_fig_sample_json(const struct rt_fig_sample *row, double v);
size_t rt_fig_sample_text(const struct rt_fig_sample *row, double v, char buf[64]);
/* A sample's figures from its "cpu" object (MiB back to bytes, values as
 * shown): whether it is a job's sample (has_job). */
bool rt_job_figures_from_json(struct json_object *cpu, struct rt_job_figures *f);

#endif
