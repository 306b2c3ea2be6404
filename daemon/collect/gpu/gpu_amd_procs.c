/* AMD: every process on a card, tracked or not, on the card's poller thread.
 * The kernel lists a DRM device's open files, with the pid that opened each,
 * in debugfs (<sys>/kernel/debug/dri/<minor or PCI address>/clients); those
 * processes' fds under /dev/dri are read through fdinfo for this card's
 * pdev: VRAM, and use as the gfx engine time since the previous poll. A
 * client shared by several processes (dup, fork) counts once, for the first
 * listed. Without debugfs (not mounted, not root) the card has no process
 * list (has_procs false); per-job attribution still reads the jobs' own
 * fdinfo (gpu_fdinfo.c). */
#include "collect/gpu/gpu_internal.h"

#include "rt/util.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLIENTS_MAX 65536
#define FDINFO_MAX 8192
#define COMM_WIDTH 20 /* "%20s" of the command: a comm is at most 15 characters */

struct client_base {
    uint64_t id, gfx_ns, capacity;
    uint64_t seen_poll;
};

struct gpu_amd_procs {
    struct client_base *base; /* the gfx counters of the last poll */
    size_t n_base, cap_base;
    uint64_t poll;
    uint64_t last_ns;
    char *buf;
};

struct gpu_amd_procs *gpu_amd_procs_new(void) { return rt_xcalloc(1, sizeof(struct gpu_amd_procs)); }

void gpu_amd_procs_free(struct gpu_amd_procs *st)
{
    if (!st)
        return;
    free(st->base);
    free(st->buf);
    free(st);
}

/* The pids of the device's clients; -1 when debugfs does not say. */
static ssize_t client_pids(int sys_fd, unsigned card, const char *pci, char *buf, int32_t **pids)
{
    char path[96];
    snprintf(path, sizeof(path), "kernel/debug/dri/%u/clients", card);
    ssize_t n = rt_read_file_at(sys_fd, path, buf, CLIENTS_MAX);
    if (n < 0) {
        snprintf(path, sizeof(path), "kernel/debug/dri/%s/clients", pci);
        n = rt_read_file_at(sys_fd, path, buf, CLIENTS_MAX);
    }
    if (n < 0)
        return -1;
    size_t count = 0, cap = 0;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        int pid;
        /* "%20s %5d %3d ..." under a header whose second column is "tgid" */
        if (strlen(line) <= COMM_WIDTH || sscanf(line + COMM_WIDTH, "%d", &pid) != 1 || pid <= 0)
            continue;
        bool dup = false;
        for (size_t i = 0; i < count && !dup; i++)
            dup = (*pids)[i] == pid;
        if (dup)
            continue;
        if (count == cap) {
            cap = cap ? 2 * cap : 16;
            *pids = rt_xrealloc(*pids, cap * sizeof(**pids));
        }
        (*pids)[count++] = pid;
    }
    return (ssize_t)count;
}

static struct client_base *find_base(struct gpu_amd_procs *st, uint64_t id)
{
    for (size_t i = 0; i < st->n_base; i++)
        if (st->base[i].id == id)
            return &st->base[i];
    return NULL;
}

/* One process's clients of this card into p; false when it has none. */
static bool read_process(struct gpu_amd_procs *st, int proc_fd, int32_t pid, const char *pci, double secs,
                         struct rt_gpu_proc *p)
{
    char path[300];
    snprintf(path, sizeof(path), "%d/fd", (int)pid);
    int fd_dir = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_dir < 0)
        return false;
    DIR *d = fdopendir(fd_dir);
    if (!d) {
        close(fd_dir);
        return false;
    }
    *p = (struct rt_gpu_proc){.pid = pid, .gi = RT_GPU_NO_ID, .ci = RT_GPU_NO_ID};
    bool any = false;
    double busy = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char target[64];
        ssize_t n = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (!rt_str_starts_with(target, "/dev/dri/"))
            continue;
        snprintf(path, sizeof(path), "%d/fdinfo/%s", (int)pid, e->d_name);
        struct gpu_amd_fdinfo fi;
        if (rt_read_file_at(proc_fd, path, st->buf, FDINFO_MAX) <= 0 || !gpu_amd_parse_fdinfo(st->buf, &fi) ||
            strcmp(fi.pdev, pci) != 0)
            continue;
        struct client_base *b = find_base(st, fi.client_id);
        if (b && b->seen_poll == st->poll)
            continue; /* the same client through another fd or process */
        any = true;
        p->vram_bytes += fi.has_vram ? fi.vram_bytes : 0;
        if (!b) {
            if (st->n_base == st->cap_base) {
                st->cap_base = st->cap_base ? 2 * st->cap_base : 16;
                st->base = rt_xrealloc(st->base, st->cap_base * sizeof(*st->base));
            }
            b = &st->base[st->n_base++];
            *b = (struct client_base){.id = fi.client_id, .gfx_ns = fi.gfx_ns, .capacity = fi.gfx_capacity};
        } else if (fi.has_gfx && secs > 0 && b->seen_poll + 1 == st->poll) {
            p->has_sm = true;
            if (fi.gfx_ns > b->gfx_ns)
                busy += (double)(fi.gfx_ns - b->gfx_ns) / (secs * 1e9 * (double)fi.gfx_capacity);
        }
        b->gfx_ns = fi.gfx_ns;
        b->seen_poll = st->poll;
    }
    closedir(d);
    p->sm_pct = busy > 1 ? 100 : 100 * busy;
    return any;
}

void gpu_amd_procs_read(struct gpu_amd_procs *st, int sys_fd, int proc_fd, unsigned card, const char *pci,
                        struct rt_gpu_dev *d, void (*push)(struct rt_gpu_dev *, const struct rt_gpu_proc *))
{
    if (!st->buf)
        st->buf = rt_xmalloc(CLIENTS_MAX + 1);
    int32_t *pids = NULL;
    ssize_t n = client_pids(sys_fd, card, pci, st->buf, &pids);
    uint64_t now = rt_mono_ns();
    double secs = st->last_ns ? (double)(now - st->last_ns) / 1e9 : 0;
    st->last_ns = now;
    st->poll++;
    if (n >= 0) {
        d->has_procs = true;
        d->has_proc_util = true;
    }
    for (ssize_t i = 0; i < n; i++) {
        struct rt_gpu_proc p;
        if (read_process(st, proc_fd, pids[i], pci, secs, &p))
            push(d, &p);
    }
    free(pids);
    /* Forget the clients that closed. */
    size_t w = 0;
    for (size_t i = 0; i < st->n_base; i++)
        if (st->base[i].seen_poll == st->poll)
            st->base[w++] = st->base[i];
    st->n_base = w;
}
