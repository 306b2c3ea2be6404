#include "proc/proccache.h"

#include "rt/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GONE UINT32_MAX

void rt_proc_cache_init(struct rt_proc_cache *c, int proc_fd)
{
    memset(c, 0, sizeof(*c));
    c->proc_fd = proc_fd;
    rt_pidmap_init(&c->map);
    rt_kept_procs_init(&c->kept);
    /* CONFIG_PROC_CHILDREN: without it, trees come from a full /proc pass. */
    char path[64];
    snprintf(path, sizeof(path), "self/task/%d/children", (int)gettid());
    c->children_files = faccessat(proc_fd, path, R_OK, 0) == 0;
}

void rt_proc_cache_free(struct rt_proc_cache *c)
{
    rt_pidmap_free(&c->map);
    rt_kept_procs_free(&c->kept);
    free(c->v);
    free(c->kids);
    memset(c, 0, sizeof(*c));
}

void rt_proc_cache_begin_tick(struct rt_proc_cache *c)
{
    rt_pidmap_clear(&c->map);
    rt_kept_procs_scan(&c->kept);
    c->n = 0;
    c->nkids = 0;
    c->scanned = false;
}

static struct rt_pinfo *entry(struct rt_proc_cache *c, int32_t pid)
{
    uint32_t idx;
    if (rt_pidmap_get(&c->map, pid, &idx))
        return idx == GONE ? NULL : &c->v[idx];
    struct rt_pstat st;
    char buf[1024];
    c->reads++;
    if (rt_kept_procs_read(&c->kept, c->proc_fd, pid, RT_KEPT_STAT, buf, sizeof(buf)) < 0 ||
        rt_pstat_parse(buf, &st) < 0) {
        rt_pidmap_put(&c->map, pid, GONE);
        return NULL;
    }
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 256;
        c->v = rt_xrealloc(c->v, c->cap * sizeof(*c->v));
    }
    struct rt_pinfo *pi = &c->v[c->n];
    memset(pi, 0, sizeof(*pi));
    pi->st = st;
    rt_pidmap_put(&c->map, pid, (uint32_t)c->n++);
    return pi;
}

/* Fallback without children files: read every process once and group by ppid. */
static void full_scan(struct rt_proc_cache *c)
{
    c->scanned = true;
    int fd = openat(c->proc_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)))
        if (rt_str_all_digits(de->d_name))
            entry(c, (int32_t)atoi(de->d_name));
    closedir(d);
    /* Children lists: one pass per parent would be quadratic; count, then place. */
    size_t n = c->n;
    for (size_t i = 0; i < n; i++) {
        c->v[i].kids_n = 0;
        c->v[i].have |= RT_PI_KIDS;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t p;
        if (rt_pidmap_get(&c->map, c->v[i].st.ppid, &p) && p != GONE)
            c->v[p].kids_n++;
    }
    size_t off = c->nkids;
    for (size_t i = 0; i < n; i++) {
        c->v[i].kids_off = off;
        off += c->v[i].kids_n;
        c->v[i].kids_n = 0;
    }
    if (off > c->capkids) {
        c->capkids = off;
        c->kids = rt_xrealloc(c->kids, c->capkids * sizeof(*c->kids));
    }
    c->nkids = off;
    for (size_t i = 0; i < n; i++) {
        uint32_t p;
        if (rt_pidmap_get(&c->map, c->v[i].st.ppid, &p) && p != GONE) {
            struct rt_pinfo *pp = &c->v[p];
            c->kids[pp->kids_off + pp->kids_n++] = c->v[i].st.pid;
        }
    }
}

/* The children of a single-threaded process from its kept file, unless
 * they fill the buffer (then, like a process's threads, read in chunks). */
static void read_kids(struct rt_proc_cache *c, int32_t pid, int32_t num_threads)
{
    char buf[4096];
    ssize_t n = num_threads <= 1 ? rt_kept_procs_read(&c->kept, c->proc_fd, pid, RT_KEPT_KIDS, buf, sizeof(buf)) : -1;
    if (n >= 0 && (size_t)n < sizeof(buf) - 1)
        rt_pchildren_parse(buf, &c->kids, &c->nkids, &c->capkids);
    else
        rt_pchildren_read(c->proc_fd, pid, num_threads, &c->kids, &c->nkids, &c->capkids);
}

const struct rt_pinfo *rt_proc_cache_get(struct rt_proc_cache *c, int32_t pid, unsigned need)
{
    if (pid <= 0)
        return NULL;
    struct rt_pinfo *pi = entry(c, pid);
    if (!pi)
        return NULL;
    unsigned todo = need & ~pi->have;
    if (todo & RT_PI_IO) {
        c->reads++;
        char buf[512];
        pi->io_ok = rt_kept_procs_read(&c->kept, c->proc_fd, pid, RT_KEPT_IO, buf, sizeof(buf)) >= 0 &&
                    rt_pio_parse(buf, &pi->read_bytes, &pi->write_bytes) == 0;
    }
    if (todo & RT_PI_PSS) {
        c->reads++;
        /* Its cost decides how long the value is reused (pss.h). */
        uint64_t t0 = rt_thread_cpu_ns();
        pi->pss_ok = rt_ppss_read(c->proc_fd, pid, &pi->pss_bytes) == 0;
        pi->pss_cost_ns = rt_thread_cpu_ns() - t0;
    }
    if (todo & RT_PI_OWNER) {
        c->reads++;
        pi->owner_ok = rt_pdump_owner(c->proc_fd, pid, &pi->owner_uid, &pi->owner_gid) == 0;
    }
    if (todo & RT_PI_HWM) {
        c->reads++;
        pi->hwm_ok = rt_phwm_read(c->proc_fd, pid, &pi->hwm_bytes) == 0;
    }
    if (todo & RT_PI_CREDS) {
        c->reads++;
        pi->creds_ok = rt_pcreds_read(c->proc_fd, pid, &pi->creds) == 0;
    }
    if (todo & RT_PI_KIDS) {
        if (c->children_files) {
            size_t before = c->nkids;
            c->reads++;
            read_kids(c, pid, pi->st.num_threads);
            pi->kids_off = before;
            pi->kids_n = c->nkids - before;
        } else if (!c->scanned) {
            size_t idx = (size_t)(pi - c->v);
            full_scan(c);
            pi = &c->v[idx];
        }
    }
    pi->have |= need;
    return pi;
}

const int32_t *rt_proc_cache_kids(const struct rt_proc_cache *c, const struct rt_pinfo *pi, size_t *n)
{
    *n = pi->kids_n;
    /* No children list allocated yet: NULL + 0 is undefined behaviour. */
    return pi->kids_n ? c->kids + pi->kids_off : NULL;
}
