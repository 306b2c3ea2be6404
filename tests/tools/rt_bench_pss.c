/* Benchmark helper (tests/bench/bench_pss.py): wall time of each per-process
 * read the sampler does, with the daemon's own readers, for the given PIDs.
 *   rt_bench_pss [--count N] PID...
 * Prints one line per PID: median and maximum µs of stat, io, children and
 * smaps_rollup (PSS) reads, and the PSS value. */
#include "proc/procfs.h"
#include "rt/util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct stats {
    double median, max;
};

static struct stats summarize(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return (struct stats){v[n / 2], v[n - 1]};
}

int main(int argc, char **argv)
{
    int count = 50, i = 1;
    if (argc > 2 && strcmp(argv[1], "--count") == 0) {
        count = atoi(argv[2]);
        i = 3;
    }
    if (i >= argc || count <= 0) {
        fprintf(stderr, "usage: rt_bench_pss [--count N] PID...\n");
        return 2;
    }
    int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (proc_fd < 0) {
        perror("/proc");
        return 1;
    }
    double *t[4];
    for (int k = 0; k < 4; k++)
        t[k] = rt_xcalloc((size_t)count, sizeof(double));
    printf("%8s %12s %12s %12s %21s %10s\n", "pid", "stat µs", "io µs", "children µs",
           "smaps_rollup µs (max)", "PSS MiB");
    for (; i < argc; i++) {
        int32_t pid = (int32_t)atoi(argv[i]);
        struct rt_pstat st = {0};
        uint64_t rb, wb, pss = 0;
        int32_t *kids = NULL;
        size_t nk = 0, cap = 0;
        int bad = 0;
        for (int r = 0; r < count; r++) {
            uint64_t a = rt_mono_ns();
            bad |= rt_pstat_read(proc_fd, pid, &st) < 0;
            uint64_t b = rt_mono_ns();
            bad |= rt_pio_read(proc_fd, pid, &rb, &wb) < 0;
            uint64_t c = rt_mono_ns();
            nk = 0;
            bad |= rt_pchildren_read(proc_fd, pid, st.num_threads, &kids, &nk, &cap) < 0;
            uint64_t d = rt_mono_ns();
            bad |= rt_ppss_read(proc_fd, pid, &pss) < 0;
            uint64_t e = rt_mono_ns();
            t[0][r] = (double)(b - a) / 1e3;
            t[1][r] = (double)(c - b) / 1e3;
            t[2][r] = (double)(d - c) / 1e3;
            t[3][r] = (double)(e - d) / 1e3;
        }
        free(kids);
        if (bad) {
            printf("%8d: some reads failed (process gone or not permitted)\n", (int)pid);
            continue;
        }
        struct stats s[4];
        for (int k = 0; k < 4; k++)
            s[k] = summarize(t[k], count);
        char pss_col[32];
        snprintf(pss_col, sizeof(pss_col), "%.1f (%.1f)", s[3].median, s[3].max);
        printf("%8d %12.1f %12.1f %12.1f %21s %10.1f\n", (int)pid, s[0].median, s[1].median,
               s[2].median, pss_col, (double)pss / (1024.0 * 1024.0));
    }
    for (int k = 0; k < 4; k++)
        free(t[k]);
    return 0;
}
