/* The CPU time of each mode since boot, per CPU and for all CPUs, as
 * /proc/stat gives it: the counters node_exporter publishes as
 * node_cpu_seconds_total. Read when a caller asks (a scrape), not by the
 * tick, whose busy figures are deltas (docs/metrics.md). */
#ifndef RT_CPU_TIMES_H
#define RT_CPU_TIMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* node_exporter's modes, in /proc/stat's order; user and nice include the
 * guest time, as the kernel counts it and node_exporter publishes it. */
#define RT_CPU_MODES 8
extern const char *const rt_cpu_mode_names[RT_CPU_MODES];

/* The ten numbers after "cpu" or "cpuN" (fields a kernel does not have
 * count as 0): false for fewer than four or a word that is no number. */
bool rt_cpu_stat_fields(const char *p, uint64_t f[10]);

struct rt_cpu_times {
    int32_t cpu;                    /* N of cpuN; -1 for the line of all CPUs */
    uint64_t ticks[RT_CPU_MODES];   /* USER_HZ */
};

/* /proc/stat's cpu lines (the all-CPU line first) into *v (malloc'd, *n
 * lines). Returns 0, or -errno (ENODATA: no cpu line parsed). */
int rt_cpu_times_read(int proc_fd, struct rt_cpu_times **v, size_t *n);

#endif
