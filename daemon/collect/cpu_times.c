#include "collect/cpu_times.h"

#include "collect/procfile.h"
#include "rt/util.h"

#include <errno.h>
#include <stdlib.h>

const char *const rt_cpu_mode_names[RT_CPU_MODES] = {"user", "nice",    "system", "idle",
                                                     "iowait", "irq", "softirq", "steal"};

bool rt_cpu_stat_fields(const char *p, uint64_t f[10])
{
    int n = 0;
    for (int i = 0; i < 10; i++)
        f[i] = 0;
    while (n < 10 && rt_scan_u64(&p, &f[n]))
        n++;
    size_t len;
    return n >= 4 && (n == 10 || !rt_scan_word(&p, &len));
}

int rt_cpu_times_read(int proc_fd, struct rt_cpu_times **v, size_t *n)
{
    struct rt_readbuf b;
    rt_readbuf_init(&b, 4096);
    ssize_t len = rt_readbuf_load(&b, proc_fd, "stat");
    *v = NULL;
    *n = 0;
    if (len < 0) {
        rt_readbuf_free(&b);
        return (int)len;
    }
    size_t cap = 0;
    char *cur = b.data, *line;
    /* The cpu lines come first; the rest (the long intr line) is not read. */
    while ((line = rt_next_line(&cur)) && line[0] == 'c' && line[1] == 'p' && line[2] == 'u') {
        const char *p = line + 3;
        int32_t cpu = -1;
        if (*p != ' ') {
            char *end;
            unsigned long idx = strtoul(p, &end, 10);
            if (end == p || *end != ' ' || idx > 1u << 20)
                continue;
            cpu = (int32_t)idx;
            p = end;
        }
        uint64_t f[10];
        if (!rt_cpu_stat_fields(p, f))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            *v = rt_xrealloc(*v, cap * sizeof(**v));
        }
        struct rt_cpu_times *t = &(*v)[(*n)++];
        t->cpu = cpu;
        for (int m = 0; m < RT_CPU_MODES; m++)
            t->ticks[m] = f[m];
    }
    rt_readbuf_free(&b);
    if (*n == 0 || (*v)[0].cpu != -1) {
        free(*v);
        *v = NULL;
        *n = 0;
        return -ENODATA;
    }
    return 0;
}
