#include "proc/kept.h"

#include "rt/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void close_proc(struct rt_kept_proc *p)
{
    for (int i = 0; i < RT_KEPT_NFILES; i++)
        rt_keptfile_close(&p->f[i]);
}

void rt_kept_procs_init(struct rt_kept_procs *k)
{
    memset(k, 0, sizeof(*k));
    rt_pidmap_init(&k->map);
}

void rt_kept_procs_free(struct rt_kept_procs *k)
{
    for (size_t i = 0; i < k->n; i++)
        close_proc(&k->v[i]);
    rt_pidmap_free(&k->map);
    memset(k, 0, sizeof(*k));
}

void rt_kept_procs_scan(struct rt_kept_procs *k)
{
    k->scan++;
    size_t keep = 0;
    for (size_t i = 0; i < k->n; i++) {
        if (k->scan - k->v[i].used > RT_KEPT_IDLE_SCANS)
            close_proc(&k->v[i]);
        else
            k->v[keep++] = k->v[i];
    }
    if (keep == k->n)
        return;
    k->n = keep;
    rt_pidmap_clear(&k->map); /* the map has no removal: placed again */
    for (size_t i = 0; i < keep; i++)
        rt_pidmap_put(&k->map, k->v[i].pid, (uint32_t)i);
}

/* Its entry, made while there is room; NULL beyond RT_KEPT_PROCS. */
static struct rt_kept_proc *entry(struct rt_kept_procs *k, int32_t pid)
{
    uint32_t i;
    if (!rt_pidmap_get(&k->map, pid, &i)) {
        if (k->n == RT_KEPT_PROCS)
            return NULL;
        i = (uint32_t)k->n++;
        k->v[i].pid = pid;
        k->v[i].f[RT_KEPT_STAT] = k->v[i].f[RT_KEPT_IO] = (struct rt_keptfile)RT_KEPTFILE_WHOLE;
        k->v[i].f[RT_KEPT_KIDS] = (struct rt_keptfile)RT_KEPTFILE_INIT;
        k->v[i].f[RT_KEPT_KIDS].record_max = 16; /* "PID " per child */
        rt_pidmap_put(&k->map, pid, i);
    }
    k->v[i].used = k->scan;
    return &k->v[i];
}

ssize_t rt_kept_procs_read(struct rt_kept_procs *k, int proc_fd, int32_t pid, enum rt_kept_file which, char *buf,
                           size_t size)
{
    struct rt_kept_proc *p = entry(k, pid);
    ssize_t n = p ? rt_keptfile_reread(&p->f[which], buf, size) : -ESTALE;
    if (n != -ESTALE)
        return n;
    char path[48]; /* made only to open it */
    if (which == RT_KEPT_STAT)
        snprintf(path, sizeof(path), "%d/stat", (int)pid);
    else if (which == RT_KEPT_IO)
        snprintf(path, sizeof(path), "%d/io", (int)pid);
    else
        snprintf(path, sizeof(path), "%d/task/%d/children", (int)pid, (int)pid);
    n = p ? rt_keptfile_read(&p->f[which], proc_fd, path, buf, size) : rt_read_file_at(proc_fd, path, buf, size);
    return n == -ESRCH ? -ENOENT : n;
}
