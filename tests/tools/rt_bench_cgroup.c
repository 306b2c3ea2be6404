/* Benchmark helper (tests/bench/bench_cgroup.py): what reading one cgroup's
 * figures costs, next to a yardstick measured in the same run.
 *   rt_bench_cgroup [--count N] PATH...
 * One line per cgroup: its processes, the files read, and the median µs of
 *   read      rt_cgroup_read (open files, pread + parse)
 *   yardstick pread of the same open files into a buffer, nothing parsed
 *   reopen    rt_cgroup_open + rt_cgroup_read + rt_cgroup_close (what a tick
 *             would cost without keeping the files open) */
#include "cgroup/cgroup.h"
#include "rt/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

/* Read every open source file as rt_cgroup_read does, without parsing. */
static size_t yardstick(const struct rt_cgroup *cg)
{
    char buf[4096];
    size_t bytes = 0;
    for (int i = 0; i < RT_CG_NSRC; i++) {
        for (int part = 0; part < 2; part++) {
            int fd = cg->src[i][part];
            if (fd < 0)
                continue;
            ssize_t r;
            off_t off = 0;
            while ((r = pread(fd, buf, sizeof(buf) - 1, off)) == (ssize_t)sizeof(buf) - 1)
                off += r;
            bytes += (size_t)off + (size_t)(r > 0 ? r : 0);
        }
    }
    return bytes;
}

int main(int argc, char **argv)
{
    int count = 2000, i = 1;
    if (argc > 2 && strcmp(argv[1], "--count") == 0) {
        count = atoi(argv[2]);
        i = 3;
    }
    if (i >= argc || count <= 0) {
        fprintf(stderr, "usage: rt_bench_cgroup [--count N] PATH...\n");
        return 2;
    }
    struct rt_roots roots;
    struct rt_cg_host h;
    if (rt_roots_open(&roots, NULL, NULL) < 0 || rt_cg_host_open(&h, &roots) < 0) {
        perror("cgroup hierarchies");
        return 1;
    }
    double *t[3];
    for (int k = 0; k < 3; k++)
        t[k] = rt_xcalloc((size_t)count, sizeof(double));
    printf("%-28s %8s %6s %7s %10s %13s %10s %7s\n", "cgroup", "procs", "files", "bytes", "read µs",
           "yardstick µs", "reopen µs", "ratio");
    int status = 0;
    for (; i < argc; i++) {
        struct rt_cgroup cg;
        int rc = rt_cgroup_open(&cg, &h, argv[i]);
        if (rc < 0) {
            fprintf(stderr, "%s: %s\n", argv[i], strerror(-rc));
            status = 1;
            continue;
        }
        int files = 0;
        for (int s = 0; s < RT_CG_NSRC; s++)
            files += (cg.src[s][0] >= 0) + (cg.src[s][1] >= 0);
        struct rt_cg_figures f;
        size_t bytes = 0;
        for (int r = 0; r < count; r++) {
            uint64_t a = rt_mono_ns();
            rt_cgroup_read(&cg, &f);
            uint64_t b = rt_mono_ns();
            bytes = yardstick(&cg);
            uint64_t c = rt_mono_ns();
            struct rt_cgroup again;
            if (rt_cgroup_open(&again, &h, argv[i]) == 0) {
                rt_cgroup_read(&again, &f);
                rt_cgroup_close(&again);
            }
            uint64_t d = rt_mono_ns();
            t[0][r] = (double)(b - a) / 1e3;
            t[1][r] = (double)(c - b) / 1e3;
            t[2][r] = (double)(d - c) / 1e3;
        }
        rt_cgroup_read(&cg, &f);
        pid_t *pids = rt_xcalloc(65536, sizeof(*pids));
        size_t n = 0;
        rt_cgroup_pids(&cg, pids, 65536, &n);
        free(pids);
        double rd = median(t[0], count), ys = median(t[1], count), ro = median(t[2], count);
        printf("%-28s %8zu %6d %7zu %10.1f %13.1f %10.1f %7.2f\n", argv[i], n, files, bytes, rd, ys, ro, rd / ys);
        rt_cgroup_close(&cg);
    }
    for (int k = 0; k < 3; k++)
        free(t[k]);
    rt_cg_host_close(&h);
    rt_roots_close(&roots);
    return status;
}
