/* Every per-job figure, described once. */
#include "rt/job_figures.h"

#include "rt/json.h"
#include "rt/sample.h"
#include "rt/util.h"

#include <math.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#define FIG(m) offsetof(struct rt_job_figures, m)
#define SUM(m) offsetof(struct rt_job_summary, m)

/* A sample's figure: its member, gate, unit; its slot in a stored record
 * and the decimals kept there. */
#define SAMPLE(m, t, g, u, s, p) \
    .name = #m, .type = RT_FT_##t, .off = FIG(m), .gate = (g), .unit = RT_UNIT_##u, .slot = (s), .places = (p)
/* Shown in samples: its JSON key (in "cpu"), CSV column, form, decimals. */
#define SHOWN(k, c, f, d) .json = (k), .csv = (c), .show = RT_SHOW_##f, .decimals = (d)
/* In Job.current: key, form, decimals, and its gauge in `metrics`. */
#define NOW(k, f, d) .now = (k), .now_form = RT_NOW_##f, .now_decimals = (d)
#define GAUGE(name, help) .prom_now = (name), .prom_now_help = (help)

/* A sample's figures, in the order of their JSON keys (json-c keeps the
 * order keys are added in, and samples list them sorted). Slots 0 to 2 and
 * 11 of a stored record are its host sample, timestamp, interval and gates;
 * a new figure takes the next free slot (RT_FIG_NUMS). */
enum {
    CG_ANON, CG_MEM, CG_FILE, CG_KERNEL, CG_PEAK, CG_SHMEM, CHILDREN, CORES, DISK_READ, DISK_WRITE, GPU_USAGE,
    GPU_UTILIZED, GPU_VRAM, MEM, OOM_KILLS, PSI_CPU_SOME, PSI_IO_FULL, PSI_IO_SOME, PSI_MEM_FULL, PSI_MEM_SOME, PSS,
    RSS, STIME, THROTTLED, UTIME, GPU_ENERGY, MEM_HWM, GPU_IDLE, GPU_XIDS, GPU_ECC_CORR, GPU_ECC_UNC, GPU_PAGES,
    GPU_HELD_POWER, GPU_HELD_THERMAL, GPU_HELD_HW, GPM_SM, GPM_OCC, GPM_TENSOR, GPM_DRAM, GPU_STALLED, NSAMPLES,
    NONE = -1
};
#define CG(m, g, s) SAMPLE(m, U64, RT_GATE_CG_##g, BYTES, s, 0)
#define PSI(m, s) SAMPLE(m, F64, RT_GATE_PSI, PCT, s, 4)

const struct rt_fig_sample rt_fig_samples[] = {
    [CG_ANON] = {CG(cg_anon_bytes, STAT, 20), SHOWN("process_cgroup_memory_anon_bytes", 0, INT, 0)},
    [CG_MEM] = {CG(cg_mem_bytes, MEM, 16), SHOWN("process_cgroup_memory_bytes", 0, INT, 0)},
    [CG_FILE] = {CG(cg_file_bytes, STAT, 21), SHOWN("process_cgroup_memory_file_bytes", 0, INT, 0)},
    [CG_KERNEL] = {CG(cg_kernel_bytes, STAT, 23), SHOWN("process_cgroup_memory_kernel_bytes", 0, INT, 0)},
    [CG_PEAK] = {CG(cg_peak_bytes, PEAK, 19), SHOWN("process_cgroup_memory_peak_bytes", 0, INT, 0)},
    [CG_SHMEM] = {CG(cg_shmem_bytes, STAT, 22), SHOWN("process_cgroup_memory_shmem_bytes", 0, INT, 0)},
    [CHILDREN] = {SAMPLE(child_count, U32, RT_GATE_TREE, COUNT, 3, 0), SHOWN("process_child_count", 23, INT, 0)},
    [CORES] = {SAMPLE(cores_used, F64, 0, CORES, 4, 4), SHOWN("process_cores_used", 26, DEC, RT_DEC_CORES),
               NOW("cores", VALUE, 4),
               GAUGE("job_cpu_busy_cores", "CPUs the running job kept busy over its last sampling interval.")},
    [DISK_READ] = {SAMPLE(disk_read_bytes, U64, RT_GATE_DISK, BYTES, 9, 0),
                   SHOWN("process_disk_read_bytes", 28, INT, 0), NOW("disk_read_bytes_per_sec", RATE, 1)},
    [DISK_WRITE] = {SAMPLE(disk_write_bytes, U64, RT_GATE_DISK, BYTES, 10, 0),
                    SHOWN("process_disk_write_bytes", 29, INT, 0), NOW("disk_write_bytes_per_sec", RATE, 1)},
    [GPU_USAGE] = {SAMPLE(gpu_usage, F64, RT_GATE_GPU, GPUS, 12, 4), SHOWN("process_gpu_usage", 30, DEC, RT_DEC_CORES),
                   NOW("gpu_usage", VALUE, 4),
                   GAUGE("job_gpu_busy_gpus", "GPUs the running job kept busy (1 = one GPU fully busy).")},
    [GPU_UTILIZED] = {SAMPLE(gpu_utilized, U32, RT_GATE_GPU, COUNT, 13, 0), SHOWN("process_gpu_utilized", 32, INT, 0),
                      NOW("gpus_used", VALUE, 0)},
    [GPU_VRAM] = {SAMPLE(gpu_vram_bytes, U64, RT_GATE_GPU, BYTES, 14, 0),
                  SHOWN("process_gpu_vram_mib", 31, MIB_DEC, RT_DEC_MIB), NOW("gpu_vram_bytes", VALUE, 0),
                  GAUGE("job_gpu_memory_used_bytes", "GPU memory (VRAM) the running job's processes hold.")},
    [MEM] = {SAMPLE(mem_bytes, U64, RT_GATE_MEM, BYTES, 17, 0), SHOWN("process_memory_bytes", 0, INT, 0),
             NOW("memory_bytes", VALUE, 0),
             GAUGE("job_memory_bytes", "Memory the running job holds that cannot be reclaimed (docs/jobs.md).")},
    [OOM_KILLS] = {SAMPLE(oom_kills, U32, RT_GATE_OOM, COUNT, 24, 0), SHOWN("process_oom_kills", 0, INT, 0)},
    [PSI_CPU_SOME] = {PSI(psi_cpu_some, 25), SHOWN("process_pressure_cpu_some_pct", 0, DEC, 2)},
    [PSI_IO_FULL] = {PSI(psi_io_full, 29), SHOWN("process_pressure_io_full_pct", 0, DEC, 2)},
    [PSI_IO_SOME] = {PSI(psi_io_some, 28), SHOWN("process_pressure_io_some_pct", 0, DEC, 2)},
    [PSI_MEM_FULL] = {PSI(psi_mem_full, 27), SHOWN("process_pressure_memory_full_pct", 0, DEC, 2)},
    [PSI_MEM_SOME] = {PSI(psi_mem_some, 26), SHOWN("process_pressure_memory_some_pct", 0, DEC, 2)},
    [PSS] = {SAMPLE(pss_bytes, U64, RT_GATE_TREE, BYTES, 8, 0), SHOWN("process_pss_mib", 27, MIB, 0),
             NOW("pss_bytes", VALUE, 0),
             GAUGE("job_memory_pss_bytes", "Proportional set size (PSS) of the running job's processes together.")},
    [RSS] = {SAMPLE(rss_bytes, U64, RT_GATE_TREE, BYTES, 7, 0), SHOWN("process_rss_mib", 0, MIB, 0),
             NOW("rss_bytes", VALUE, 0),
             GAUGE("job_memory_rss_bytes", "Resident memory (RSS) of the running job's processes together.")},
    [STIME] = {SAMPLE(stime_secs, F64, 0, SECS, 6, 4), SHOWN("process_stime_secs", 25, DEC, RT_DEC_SECS)},
    [THROTTLED] = {SAMPLE(throttled_pct, F64, RT_GATE_THROTTLE, PCT, 30, 4), SHOWN("process_throttled_pct", 0, DEC, 2)},
    [UTIME] = {SAMPLE(utime_secs, F64, 0, SECS, 5, 4), SHOWN("process_utime_secs", 24, DEC, RT_DEC_SECS)},
    /* Not in samples: the job's totals and the upload read them. */
    [GPU_ENERGY] = {SAMPLE(gpu_energy_joules, F64, RT_GATE_GPU | RT_GATE_GPU_ENERGY, JOULES, 15, 6)},
    [MEM_HWM] = {SAMPLE(mem_hwm_bytes, U64, RT_GATE_HWM, BYTES, 18, 0)},
    [GPU_IDLE] = {SAMPLE(gpu_idle, U32, RT_GATE_GPU, COUNT, 31, 0)},
    [GPU_XIDS] = {SAMPLE(gpu_xids, U32, RT_GATE_GPU_XID, COUNT, 32, 0)},
    [GPU_ECC_CORR] = {SAMPLE(gpu_ecc_corrected, U32, RT_GATE_GPU_ECC, COUNT, 33, 0)},
    [GPU_ECC_UNC] = {SAMPLE(gpu_ecc_uncorrected, U32, RT_GATE_GPU_ECC, COUNT, 34, 0)},
    [GPU_PAGES] = {SAMPLE(gpu_pages, U32, RT_GATE_GPU_PAGES, COUNT, 35, 0)},
    [GPU_HELD_POWER] = {SAMPLE(gpu_held_power_secs, F64, RT_GATE_GPU_CLOCKS, SECS, 36, 3)},
    [GPU_HELD_THERMAL] = {SAMPLE(gpu_held_thermal_secs, F64, RT_GATE_GPU_CLOCKS, SECS, 37, 3)},
    [GPU_HELD_HW] = {SAMPLE(gpu_held_hw_secs, F64, RT_GATE_GPU_CLOCKS, SECS, 38, 3)},
    [GPM_SM] = {SAMPLE(gpm_sm_active, F64, RT_GATE_GPM, PCT, 39, 2)},
    [GPM_OCC] = {SAMPLE(gpm_sm_occupancy, F64, RT_GATE_GPM, PCT, 40, 2)},
    [GPM_TENSOR] = {SAMPLE(gpm_tensor_active, F64, RT_GATE_GPM, PCT, 41, 2)},
    [GPM_DRAM] = {SAMPLE(gpm_dram_bw, F64, RT_GATE_GPM, PCT, 42, 2)},
    [GPU_STALLED] = {SAMPLE(gpu_stalled_pct, F64, RT_GATE_GPM, PCT, 43, 0)},
};
const size_t rt_fig_nsamples = RT_ARRAY_SIZE(rt_fig_samples);
_Static_assert(RT_ARRAY_SIZE(rt_fig_samples) == NSAMPLES, "a row for each figure");

/* A total: its key, rule and the sample figures it is made of, its member
 * in struct rt_job_summary; then its unit, label and other names. */
#define TOTAL(k, r, s1, s2, t, m) \
    .key = (k), .rule = RT_RULE_##r, .src = (s1), .src2 = (s2), .type = RT_FT_##t, .off = SUM(m)
#define RATE_OF(k, of_) .key = (k), .rule = RT_RULE_PER_SEC, .src = NONE, .src2 = NONE, .of = (of_), .type = RT_FT_F64
/* Its family in `metrics`. */
#define PROM(name, type, help) .prom = (name), .prom_type = (type), .prom_help = (help)
/* Its field in the job-finished record: value x scale with these decimals
 * (-1: an integer), and the field for people (also said in the message). */
#define JOURNAL(f, scale, dec, text) .journal = (f), .journal_scale = (scale), .journal_decimals = (dec), .journal_text = (text)

/* In the statistics of `report` and `recommend`: its name and row title. */
#define STAT(name, title_) .stat = (name), .title = (title_)

/* The totals, in the order Job.summary and the report list them. */
const struct rt_fig_total rt_fig_totals[] = {
    {TOTAL("cpu_secs", SUM, UTIME, STIME, F64, cpu_secs), .decimals = 3, .unit = RT_UNIT_SECS, .label = "CPU",
     PROM("job_cpu_seconds_total", "counter", "CPU time (user and system) the job's processes used."),
     JOURNAL("CPU_USAGE_NSEC", 1e9, -1, "CPU_USAGE")},
    {RATE_OF("avg_cores", "cpu_secs"), .decimals = 4, .unit = RT_UNIT_CORES, .label = "cores on average",
     STAT("cores_mean", "CPU cores, mean")},
    {TOTAL("peak_cores", PEAK, CORES, NONE, F64, peak_cores), .at_least = "avg_cores", .decimals = 4,
     .unit = RT_UNIT_CORES, .label = "cores at peak", STAT("cores_peak", "CPU cores, peak")},
    {TOTAL("sustained_cores", SUSTAINED, CORES, NONE, F64, sustained_cores), .at_least = "avg_cores", .decimals = 4,
     .later = true, .unit = RT_UNIT_CORES, .label = "cores sustained",
     STAT("cores_sustained", "CPU cores, sustained (a phase of 10 s or more)")},
    {TOTAL("peak_children", PEAK, CHILDREN, NONE, U32, peak_children), .unit = RT_UNIT_COUNT,
     .label = "children at peak"},
    {TOTAL("memory_peak_bytes", PEAK, MEM, MEM_HWM, U64, memory_peak_bytes), .later = true, .unit = RT_UNIT_BYTES,
     .label = "peak memory", STAT("memory_peak_bytes", "Memory, peak (what it could not do without)"),
     PROM("job_memory_peak_bytes", "gauge", "The most memory the job held that cannot be reclaimed (docs/jobs.md)."),
     JOURNAL("MEMORY_PEAK_BYTES", 1, -1, "MEMORY_PEAK")},
    {TOTAL("cgroup_memory_peak_bytes", PEAK, CG_PEAK, NONE, U64, cgroup_memory_peak_bytes), .unit = RT_UNIT_BYTES,
     .label = "cgroup peak", STAT("memory_cgroup_peak_bytes", "Memory of its cgroup, peak (page cache included)"),
     JOURNAL("MEMORY_CGROUP_PEAK_BYTES", 1, -1, NULL)},
    {TOTAL("avg_memory_bytes", TIME_MEAN, MEM, NONE, F64, memory_byte_secs), .record = "memory_byte_secs",
     .later = true, .unit = RT_UNIT_BYTES, .label = "mean memory",
     STAT("memory_mean_bytes", "Memory, time-weighted mean (what it could not do without)")},
    {TOTAL("avg_pss_bytes", MEAN, PSS, NONE, F64, pss_sum_bytes), .record = "pss_sum_bytes", .later = true,
     .unit = RT_UNIT_BYTES, .label = "mean PSS", STAT("memory_pss_mean_bytes", "Memory (PSS), mean")},
    {TOTAL("peak_pss_bytes", PEAK, PSS, NONE, U64, peak_pss_bytes), .unit = RT_UNIT_BYTES, .label = "peak PSS",
     STAT("memory_pss_peak_bytes", "Memory (PSS), peak"), JOURNAL("MEMORY_PSS_PEAK_BYTES", 1, -1, "MEMORY_PSS_PEAK")},
    {TOTAL("peak_rss_bytes", PEAK, RSS, NONE, U64, peak_rss_bytes), .unit = RT_UNIT_BYTES, .label = "peak RSS",
     STAT("memory_rss_peak_bytes", "Memory (RSS), peak"),
     PROM("job_memory_rss_peak_bytes", "gauge", "Highest resident memory (RSS) of the job's processes together."),
     JOURNAL("MEMORY_RSS_PEAK_BYTES", 1, -1, "MEMORY_RSS_PEAK")},
    {TOTAL("gpu_avg_usage", TIME_MEAN, GPU_USAGE, NONE, F64, gpu_usage_secs), .record = "gpu_usage_secs",
     .decimals = 4, .unit = RT_UNIT_GPUS, .label = "GPUs on average", STAT("gpu_mean", "GPU use, mean (GPUs)"),
     JOURNAL("GPU_UTILIZATION_AVG_PERCENT", 100, 1, NULL)},
    {TOTAL("gpu_peak_usage", PEAK, GPU_USAGE, NONE, F64, gpu_peak_usage), .decimals = 4, .later = true,
     .unit = RT_UNIT_GPUS, .label = "GPUs at peak", STAT("gpu_peak", "GPU use, peak (GPUs)")},
    {TOTAL("gpu_avg_vram_bytes", MEAN, GPU_VRAM, NONE, F64, gpu_vram_sum_bytes), .record = "gpu_vram_sum_bytes",
     .later = true, .unit = RT_UNIT_BYTES, .label = "mean VRAM", STAT("vram_mean_bytes", "VRAM, mean")},
    {TOTAL("gpu_peak_vram_bytes", PEAK, GPU_VRAM, NONE, U64, gpu_peak_vram_bytes), .unit = RT_UNIT_BYTES,
     .label = "peak VRAM", STAT("vram_peak_bytes", "VRAM, peak"), JOURNAL("GPU_MEM_PEAK_BYTES", 1, -1, NULL)},
    {TOTAL("gpu_energy_joules", SUM, GPU_ENERGY, NONE, F64, gpu_energy_joules), .decimals = 3,
     .unit = RT_UNIT_JOULES, .label = "energy",
     PROM("job_gpu_energy_joules_total", "counter", "The job's share of the energy of the GPUs it used."),
     JOURNAL("GPU_ENERGY_J", 1, 3, NULL)},
    {TOTAL("gpu_avg_held", TIME_MEAN, GPU_UTILIZED, NONE, F64, gpu_held_secs), .record = "gpu_held_secs",
     .decimals = 4, .later = true, .unit = RT_UNIT_GPUS, .label = "GPUs held on average",
     STAT("gpu_held_mean", "GPUs held, mean")},
    {TOTAL("gpu_avg_idle", TIME_MEAN, GPU_IDLE, NONE, F64, gpu_idle_secs), .record = "gpu_idle_secs",
     .decimals = 4, .later = true, .unit = RT_UNIT_GPUS, .label = "GPUs idle but held on average",
     STAT("gpu_idle_mean", "GPUs idle but held (or given and unused), mean")},
    {TOTAL("gpu_stalled_pct", TIME_MEAN, GPU_STALLED, NONE, F64, gpu_stalled_secs), .record = "gpu_stalled_secs",
     .decimals = 2, .later = true, .unit = RT_UNIT_PCT, .label = "time a GPU was busy but stalled",
     STAT("gpu_stalled_pct", "Time a GPU of it was busy but stalled (%)")},
    {TOTAL("gpm.sm_active_pct", TIME_MEAN, GPM_SM, NONE, F64, gpm_sm_active_secs), .record = "gpm_sm_active_secs",
     .decimals = 2, .later = true, .unit = RT_UNIT_PCT, .label = "SM activity",
     STAT("gpm_sm_active_pct", "GPU SM activity, mean (GPM, %)")},
    {TOTAL("gpm.sm_occupancy_pct", TIME_MEAN, GPM_OCC, NONE, F64, gpm_sm_occupancy_secs),
     .record = "gpm_sm_occupancy_secs", .decimals = 2, .later = true, .unit = RT_UNIT_PCT, .label = "SM occupancy",
     STAT("gpm_sm_occupancy_pct", "GPU SM occupancy, mean (GPM, %)")},
    {TOTAL("gpm.tensor_active_pct", TIME_MEAN, GPM_TENSOR, NONE, F64, gpm_tensor_active_secs),
     .record = "gpm_tensor_active_secs", .decimals = 2, .later = true, .unit = RT_UNIT_PCT,
     .label = "tensor activity", STAT("gpm_tensor_active_pct", "GPU tensor activity, mean (GPM, %)")},
    {TOTAL("gpm.dram_bw_pct", TIME_MEAN, GPM_DRAM, NONE, F64, gpm_dram_bw_secs), .record = "gpm_dram_bw_secs",
     .decimals = 2, .later = true, .unit = RT_UNIT_PCT, .label = "DRAM bandwidth",
     STAT("gpm_dram_bw_pct", "GPU DRAM bandwidth, mean (GPM, %)")},
    {TOTAL("gpu_xid_errors", SUM, GPU_XIDS, NONE, U64, gpu_xid_errors), .later = true, .unit = RT_UNIT_COUNT,
     .label = "XID errors", STAT("gpu_xid_errors", "XID errors of its GPUs"),
     PROM("job_gpu_xid_errors_total", "counter", "XID errors of the GPUs the job used, while it used them."),
     JOURNAL("GPU_XID_ERRORS", 1, -1, NULL)},
    {TOTAL("gpu_ecc_errors.corrected", SUM, GPU_ECC_CORR, NONE, U64, gpu_ecc_corrected), .later = true,
     .unit = RT_UNIT_COUNT, .label = "corrected ECC errors",
     PROM("job_gpu_ecc_corrected_errors_total", "counter", "Corrected ECC errors of the GPUs the job used."),
     JOURNAL("GPU_ECC_CORRECTED", 1, -1, NULL)},
    {TOTAL("gpu_ecc_errors.uncorrected", SUM, GPU_ECC_UNC, NONE, U64, gpu_ecc_uncorrected), .later = true,
     .unit = RT_UNIT_COUNT, .label = "uncorrected ECC errors", STAT("gpu_ecc_uncorrected", "Uncorrected ECC errors"),
     PROM("job_gpu_ecc_uncorrected_errors_total", "counter", "Uncorrected ECC errors of the GPUs the job used."),
     JOURNAL("GPU_ECC_UNCORRECTED", 1, -1, NULL)},
    {TOTAL("gpu_pages_retired", SUM, GPU_PAGES, NONE, U64, gpu_pages), .later = true, .unit = RT_UNIT_COUNT,
     .label = "GPU memory pages retired or rows remapped", JOURNAL("GPU_PAGES_RETIRED", 1, -1, NULL)},
    {TOTAL("gpu_clocks_held.power_secs", SUM, GPU_HELD_POWER, NONE, F64, gpu_held_power_secs), .decimals = 1,
     .later = true, .unit = RT_UNIT_SECS, .label = "GPU clocks held down by power",
     STAT("gpu_held_power_secs", "GPU clocks held down by power (GPU-seconds)"),
     JOURNAL("GPU_CLOCKS_HELD_POWER_USEC", 1e6, -1, NULL)},
    {TOTAL("gpu_clocks_held.thermal_secs", SUM, GPU_HELD_THERMAL, NONE, F64, gpu_held_thermal_secs),
     .decimals = 1, .later = true, .unit = RT_UNIT_SECS, .label = "GPU clocks held down by heat",
     STAT("gpu_held_thermal_secs", "GPU clocks held down by heat (GPU-seconds)"),
     JOURNAL("GPU_CLOCKS_HELD_THERMAL_USEC", 1e6, -1, NULL)},
    {TOTAL("gpu_clocks_held.hw_slowdown_secs", SUM, GPU_HELD_HW, NONE, F64, gpu_held_hw_secs), .decimals = 1,
     .later = true, .unit = RT_UNIT_SECS, .label = "GPU clocks held down by a hardware slowdown",
     STAT("gpu_held_hw_secs", "GPU clocks held down by a hardware slowdown (GPU-seconds)"),
     JOURNAL("GPU_CLOCKS_HELD_HW_SLOWDOWN_USEC", 1e6, -1, NULL)},
    {TOTAL("disk_read_bytes", SUM, DISK_READ, NONE, U64, disk_read_bytes), .unit = RT_UNIT_BYTES, .label = "read",
     STAT("disk_read_bytes", "Disk read by the job"),
     PROM("job_disk_read_bytes_total", "counter", "Bytes the job's processes read from storage."),
     JOURNAL("IO_METRIC_READ_BYTES", 1, -1, "IO_READ")},
    {TOTAL("disk_write_bytes", SUM, DISK_WRITE, NONE, U64, disk_write_bytes), .unit = RT_UNIT_BYTES,
     .label = "written", STAT("disk_write_bytes", "Disk written by the job"),
     PROM("job_disk_written_bytes_total", "counter", "Bytes the job's processes wrote to storage."),
     JOURNAL("IO_METRIC_WRITE_BYTES", 1, -1, "IO_WRITE")},
    {TOTAL("oom_kills", SUM, OOM_KILLS, NONE, U64, oom_kills), .unit = RT_UNIT_COUNT, .label = "OOM kills",
     STAT("oom_kills", "Processes the kernel's OOM killer killed"),
     PROM("job_oom_kills_total", "counter", "Processes of the job the kernel's OOM killer killed."),
     JOURNAL("OOM_KILLS", 1, -1, NULL)},
    {TOTAL("pressure.cpu_some_pct", TIME_MEAN, PSI_CPU_SOME, NONE, F64, psi_cpu_some_secs),
     .record = "pressure_cpu_some_secs", .decimals = 2, .unit = RT_UNIT_PCT, .label = "CPU pressure",
     STAT("pressure_cpu_some_pct", "CPU pressure: time some of it waited for a CPU (%)")},
    {TOTAL("pressure.memory_some_pct", TIME_MEAN, PSI_MEM_SOME, NONE, F64, psi_mem_some_secs),
     .record = "pressure_memory_some_secs", .decimals = 2, .unit = RT_UNIT_PCT, .label = "memory pressure",
     STAT("pressure_memory_some_pct", "Memory pressure: time some of it waited for memory (%)")},
    {TOTAL("pressure.memory_full_pct", TIME_MEAN, PSI_MEM_FULL, NONE, F64, psi_mem_full_secs),
     .record = "pressure_memory_full_secs", .decimals = 2, .unit = RT_UNIT_PCT, .label = "memory pressure (full)",
     STAT("pressure_memory_full_pct", "Memory pressure: time all of it waited for memory (%)")},
    {TOTAL("pressure.io_some_pct", TIME_MEAN, PSI_IO_SOME, NONE, F64, psi_io_some_secs),
     .record = "pressure_io_some_secs", .decimals = 2, .unit = RT_UNIT_PCT, .label = "I/O pressure",
     STAT("pressure_io_some_pct", "I/O pressure: time some of it waited for I/O (%)")},
    {TOTAL("pressure.io_full_pct", TIME_MEAN, PSI_IO_FULL, NONE, F64, psi_io_full_secs),
     .record = "pressure_io_full_secs", .decimals = 2, .unit = RT_UNIT_PCT, .label = "I/O pressure (full)",
     STAT("pressure_io_full_pct", "I/O pressure: time all of it waited for I/O (%)")},
    {TOTAL("throttled_pct", TIME_MEAN, THROTTLED, NONE, F64, throttled_secs), .record = "throttled_secs",
     .decimals = 2, .unit = RT_UNIT_PCT, .label = "throttled",
     STAT("cpu_throttled_pct", "CPU periods throttled by its quota (%)")},
};
const size_t rt_fig_ntotals = RT_ARRAY_SIZE(rt_fig_totals);
_Static_assert(RT_ARRAY_SIZE(rt_fig_totals) <= 64, "rt_job_summary.unknown has a bit per total");

const struct rt_fig_gate rt_fig_gates[RT_NGATES] = {
    {"has_gpu", "gpu_secs", false},        {"has_gpu_energy", NULL, false},
    {"has_tree", NULL, true},              {"has_disk", NULL, true},
    {"has_memory", "memory_secs", false},           {"has_hwm", NULL, false},
    {"has_cgroup_memory", NULL, false},    {"has_cgroup_stat", NULL, false},
    {"has_cgroup_peak", NULL, false},      {"has_oom", NULL, false},
    {"has_pressure", "pressure_secs", false}, {"has_throttle", "throttle_secs", false},
    {"has_gpu_xid", NULL, false},          {"has_gpu_ecc", NULL, false},
    {"has_gpu_pages", NULL, false},        {"has_gpu_clocks", NULL, false},
    {"has_gpm", "gpm_secs", false},
};

int rt_fig_sample_find(const char *name)
{
    for (size_t i = 0; i < rt_fig_nsamples; i++)
        if (strcmp(rt_fig_samples[i].name, name) == 0)
            return (int)i;
    return -1;
}

int rt_fig_total_find(const char *key)
{
    for (size_t i = 0; i < rt_fig_ntotals; i++)
        if (strcmp(rt_fig_totals[i].key, key) == 0)
            return (int)i;
    return -1;
}

double rt_fig_get(const void *base, enum rt_fig_type type, size_t off)
{
    const char *p = (const char *)base + off;
    switch (type) {
    case RT_FT_U32: return *(const uint32_t *)(const void *)p;
    case RT_FT_U64: return (double)*(const uint64_t *)(const void *)p;
    case RT_FT_F64: return *(const double *)(const void *)p;
    }
    return 0;
}

uint64_t rt_fig_u64(double v)
{
    return v > 0 ? (v < 0x1p64 ? (uint64_t)v : UINT64_MAX) : 0;
}

void rt_fig_set(void *base, enum rt_fig_type type, size_t off, double v)
{
    char *p = (char *)base + off;
    /* A damaged store may hold anything: integers stay in their range. */
    switch (type) {
    case RT_FT_U32: *(uint32_t *)(void *)p = v > 0 ? (v < 0x1p32 ? (uint32_t)v : UINT32_MAX) : 0; break;
    case RT_FT_U64: *(uint64_t *)(void *)p = rt_fig_u64(v); break;
    case RT_FT_F64: *(double *)(void *)p = v; break;
    }
}

bool rt_fig_sample_value(const struct rt_job_figures *f, size_t row, double *v)
{
    const struct rt_fig_sample *r = &rt_fig_samples[row];
    *v = rt_fig_get(f, r->type, r->off);
    return (f->gates & r->gate) == r->gate;
}

bool rt_fig_sample_in(const struct rt_job_figures *f, bool has_job, size_t row, double *v)
{
    return rt_fig_sample_value(f, row, v) && (has_job || rt_fig_samples[row].gate);
}

double rt_fig_shown(const struct rt_fig_sample *row, double v)
{
    switch (row->show) {
    case RT_SHOW_INT: return v;
    case RT_SHOW_DEC: return rt_round_dec(v, row->decimals);
    case RT_SHOW_MIB: return floor(v / (double)RT_MIB) * (double)RT_MIB;
    case RT_SHOW_MIB_DEC: return rt_round_dec(v / (double)RT_MIB, row->decimals) * (double)RT_MIB;
    }
    return v;
}

struct json_object *rt_fig_sample_json(const struct rt_fig_sample *row, double v)
{
    switch (row->show) {
    case RT_SHOW_INT: return rt_json_u64(rt_fig_u64(v));
    case RT_SHOW_DEC: return rt_json_double(v, row->decimals);
    case RT_SHOW_MIB: return rt_json_u64(rt_fig_u64(v) / RT_MIB);
    case RT_SHOW_MIB_DEC: return rt_json_double(v / (double)RT_MIB, row->decimals);
    }
    return NULL;
}

size_t rt_fig_sample_text(const struct rt_fig_sample *row, double v, char buf[64])
{
    uint64_t u = rt_fig_u64(v);
    switch (row->show) {
    case RT_SHOW_INT: break;
    case RT_SHOW_DEC: return rt_json_format_double(v, row->decimals, buf);
    case RT_SHOW_MIB: u /= RT_MIB; break; /* as rt_fig_sample_json */
    case RT_SHOW_MIB_DEC: return rt_json_format_double(v / (double)RT_MIB, row->decimals, buf);
    }
    size_t n = rt_fmt_u64(buf, u);
    buf[n] = '\0';
    return n;
}

bool rt_fig_sample_parse(const struct rt_fig_sample *row, struct json_object *cpu, double *v)
{
    if (!row->json)
        return false;
    uint64_t u;
    switch (row->show) {
    case RT_SHOW_INT:
        if (!rt_json_get_u64(cpu, row->json, &u))
            return false;
        *v = (double)u;
        return true;
    case RT_SHOW_DEC: return rt_json_get_double(cpu, row->json, v);
    case RT_SHOW_MIB:
        if (!rt_json_get_u64(cpu, row->json, &u))
            return false;
        *v = (double)(u * RT_MIB);
        return true;
    case RT_SHOW_MIB_DEC:
        if (!rt_json_get_double(cpu, row->json, v))
            return false;
        *v = *v > 0 ? (double)llround(*v * (double)RT_MIB) : 0;
        return true;
    }
    return false;
}

bool rt_job_figures_from_json(struct json_object *cpu, struct rt_job_figures *f)
{
    memset(f, 0, sizeof(*f));
    bool has_job = false;
    /* A gate is on where the sample shows its figures. */
    for (size_t i = 0; i < rt_fig_nsamples; i++) {
        struct json_object *x;
        const struct rt_fig_sample *r = &rt_fig_samples[i];
        if (r->json && json_object_object_get_ex(cpu, r->json, &x) && x) {
            f->gates |= r->gate;
            has_job |= !r->gate;
        }
    }
    for (size_t i = 0; i < rt_fig_nsamples; i++) {
        const struct rt_fig_sample *r = &rt_fig_samples[i];
        double v;
        if ((f->gates & r->gate) == r->gate && rt_fig_sample_parse(r, cpu, &v))
            rt_fig_set(f, r->type, r->off, v);
    }
    return has_job;
}

double rt_fig_gate_secs(const struct rt_job_summary *s, uint32_t gate)
{
    return gate ? s->gate_secs[__builtin_ctz(gate)] : 0;
}

/* Online CPUs, read once: sysconf reads sysfs on every call, and a job's
 * JSON is made under the jobs lock (ListJobs: once per job). */
static double online_cpus(void)
{
    static _Atomic long n;
    long v = n;
    if (!v)
        n = v = sysconf(_SC_NPROCESSORS_ONLN);
    return (double)v;
}

void rt_fig_sustained_add(double *core_secs, double *secs, double *peak, double v, double span)
{
    *core_secs += v * span;
    *secs += span;
    if (*secs >= RT_SUSTAINED_BLOCK_SECS - 1e-9) {
        if (*core_secs / *secs > *peak)
            *peak = *core_secs / *secs;
        *core_secs = *secs = 0;
    }
}

bool rt_fig_total_value(const struct rt_job_summary *s, size_t row, double duration_secs, double *v)
{
    const struct rt_fig_total *t = &rt_fig_totals[row];
    if (t->rule == RT_RULE_PER_SEC) {
        rt_fig_total_value(s, (size_t)rt_fig_total_find(t->of), duration_secs, v);
        /* CPU time comes in clock ticks: a job of a few ms could show more
         * cores than the host has. */
        *v /= fmax(duration_secs, RT_CORES_MIN_SPAN_SECS);
        double ncpu = online_cpus();
        if (t->unit == RT_UNIT_CORES && ncpu >= 1 && *v > ncpu)
            *v = ncpu;
        return true;
    }
    uint32_t gate = rt_fig_samples[t->src].gate;
    uint32_t gate2 = t->src2 >= 0 ? rt_fig_samples[t->src2].gate : gate;
    if (((s->gates & gate) != gate && (s->gates & gate2) != gate2) || (s->unknown >> row & 1))
        return false;
    *v = rt_fig_get(s, t->type, t->off);
    if (t->rule == RT_RULE_MEAN)
        *v = (double)llround(*v / (double)(s->samples ? s->samples : 1));
    else if (t->rule == RT_RULE_TIME_MEAN)
        *v = rt_fig_gate_secs(s, gate) > 0 ? *v / rt_fig_gate_secs(s, gate) : 0;
    double floor;
    if (t->at_least && rt_fig_total_value(s, (size_t)rt_fig_total_find(t->at_least), duration_secs, &floor))
        *v = fmax(*v, floor);
    return true;
}


void rt_fig_summary_put(struct json_object *summary, const char *key, struct json_object *v)
{
    const char *dot = strchr(key, '.');
    if (!dot) {
        json_object_object_add(summary, key, v);
        return;
    }
    char group[64];
    snprintf(group, sizeof(group), "%.*s", (int)(dot - key), key);
    struct json_object *g = rt_json_get_object(summary, group);
    if (!g) {
        g = json_object_new_object();
        json_object_object_add(summary, group, g);
    }
    json_object_object_add(g, dot + 1, v);
}

bool rt_fig_summary_get(struct json_object *summary, const char *key, double *v)
{
    const char *dot = strchr(key, '.');
    if (!dot)
        return rt_json_get_double(summary, key, v);
    char group[64];
    snprintf(group, sizeof(group), "%.*s", (int)(dot - key), key);
    return rt_json_get_double(rt_json_get_object(summary, group), dot + 1, v);
}
