/* AMD per-job attribution from /proc/PID/fdinfo: the job's DRM clients, their
 * VRAM and gfx engine time. A full scan of a process costs a readlink per fd
 * (about 5 us), so each process's DRM fds are remembered and only those are
 * read. A full rescan happens as soon as the size of /proc/PID/fd changes
 * (Linux >= 6.2 reports the open fd count there), and periodically: every
 * RESCAN_EVERY calls, RESCAN_EVERY_COUNTED where that count is available. */
#include "collect/gpu/gpu_internal.h"

#include "rt/util.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define FDINFO_MAX 8192
#define RESCAN_EVERY 10
#define RESCAN_EVERY_COUNTED 60
#define KEEP_MISSED 3 /* calls a client may go unseen before it is forgotten */

struct fdinfo_client {
    size_t slot;
    uint64_t client_id;
    uint64_t gfx_ns;
    bool seen;       /* in this call: also dedups fds sharing the client */
    unsigned missed; /* calls since last seen */
};

struct fdinfo_proc {
    int32_t pid;
    int *fds; /* amdgpu client fds found by the last full scan */
    size_t n_fds, cap;
    bool scanned;
    off_t dir_size; /* st_size of /proc/PID/fd at that scan */
    unsigned age;   /* calls since */
};

struct gpu_fdinfo_state {
    struct fdinfo_client *clients;
    size_t n_clients, clients_cap;
    struct fdinfo_proc *procs; /* sorted by pid */
    size_t n_procs;
    bool started;
};

struct gpu_fdinfo_state *gpu_fdinfo_new(void) { return rt_xcalloc(1, sizeof(struct gpu_fdinfo_state)); }

void gpu_fdinfo_free(struct gpu_fdinfo_state *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->n_procs; i++)
        free(st->procs[i].fds);
    free(st->procs);
    free(st->clients);
    free(st);
}

static ssize_t amd_slot(const struct rt_gpu_collector *c, const char *pdev)
{
    for (size_t i = 0; i < c->n_view; i++)
        if (c->view[i].visible && c->view[i].vendor == GPU_AMD && strcasecmp(c->view[i].data.bus_id, pdev) == 0)
            return (ssize_t)i;
    return -1;
}

static struct fdinfo_client *find_client(struct gpu_fdinfo_state *st, size_t slot, uint64_t id)
{
    for (size_t i = 0; i < st->n_clients; i++)
        if (st->clients[i].slot == slot && st->clients[i].client_id == id)
            return &st->clients[i];
    return NULL;
}

/* Account one client. It counts once per job however many fds (dup, fork)
 * share it. A client unknown at the job's first call only sets its baseline
 * (it may predate the job); one that appears later was opened since the
 * previous call, so all its engine time counts. false: not a visible amdgpu
 * device. */
static bool account(struct rt_gpu_collector *c, struct gpu_fdinfo_state *st, const struct gpu_amd_fdinfo *fi)
{
    ssize_t slot = amd_slot(c, fi->pdev);
    if (slot < 0)
        return false;
    struct fdinfo_client *cl = find_client(st, (size_t)slot, fi->client_id);
    if (cl && cl->seen)
        return true;
    struct gpu_job_acc *acc = &c->acc[slot];
    acc->vram += fi->vram_bytes;
    if (!cl) {
        if (st->n_clients == st->clients_cap) {
            st->clients_cap = st->clients_cap ? 2 * st->clients_cap : 8;
            st->clients = rt_xrealloc(st->clients, st->clients_cap * sizeof(*st->clients));
        }
        cl = &st->clients[st->n_clients++];
        *cl = (struct fdinfo_client){.slot = (size_t)slot, .client_id = fi->client_id, .gfx_ns = st->started ? 0 : fi->gfx_ns};
    }
    if (fi->has_gfx && fi->gfx_ns >= cl->gfx_ns)
        acc->gfx_ns += (fi->gfx_ns - cl->gfx_ns) / fi->gfx_capacity;
    cl->gfx_ns = fi->gfx_ns;
    cl->seen = true;
    cl->missed = 0;
    return true;
}

/* Read one fd's fdinfo if the fd is a DRM node; true if it is an amdgpu
 * client of a visible device. */
static bool read_fd(struct rt_gpu_collector *c, struct gpu_fdinfo_state *st, int fd_dir, int fdinfo_dir,
                    const char *name)
{
    char target[64];
    ssize_t n = readlinkat(fd_dir, name, target, sizeof(target) - 1);
    if (n <= 0)
        return false;
    target[n] = '\0';
    if (!rt_str_starts_with(target, "/dev/dri/"))
        return false;
    struct gpu_amd_fdinfo fi;
    return rt_read_file_at(fdinfo_dir, name, c->fdinfo_buf, FDINFO_MAX) > 0 &&
           gpu_amd_parse_fdinfo(c->fdinfo_buf, &fi) && account(c, st, &fi);
}

static void remember_fd(struct fdinfo_proc *p, int fd)
{
    if (p->n_fds == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 4;
        p->fds = rt_xrealloc(p->fds, p->cap * sizeof(*p->fds));
    }
    p->fds[p->n_fds++] = fd;
}

static void scan_proc(struct rt_gpu_collector *c, struct gpu_fdinfo_state *st, struct fdinfo_proc *p)
{
    char path[64];
    snprintf(path, sizeof(path), "%d/fd", (int)p->pid);
    int fd_dir = openat(c->proc_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    snprintf(path, sizeof(path), "%d/fdinfo", (int)p->pid);
    int fdinfo_dir = openat(c->proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_dir < 0 || fdinfo_dir < 0) { /* exited, or not ours to read */
        p->n_fds = 0;
        p->scanned = false;
        if (fd_dir >= 0)
            close(fd_dir);
        if (fdinfo_dir >= 0)
            close(fdinfo_dir);
        return;
    }
    struct stat sb;
    off_t size = fstat(fd_dir, &sb) == 0 ? sb.st_size : -1;
    unsigned every = p->dir_size > 0 ? RESCAN_EVERY_COUNTED : RESCAN_EVERY;
    bool full = !p->scanned || p->age >= every || size != p->dir_size;
    if (!full) {
        size_t w = 0; /* only the fds known to be clients; drop the closed ones */
        for (size_t i = 0; i < p->n_fds; i++) {
            char name[16];
            snprintf(name, sizeof(name), "%d", p->fds[i]);
            if (read_fd(c, st, fd_dir, fdinfo_dir, name))
                p->fds[w++] = p->fds[i];
        }
        p->n_fds = w;
        p->age++;
    } else {
        DIR *d = fdopendir(fdinfo_dir);
        if (d) {
            p->n_fds = 0;
            p->age = 0;
            p->dir_size = size;
            p->scanned = true;
            struct dirent *e;
            while ((e = readdir(d)))
                if (rt_str_all_digits(e->d_name) && read_fd(c, st, fd_dir, dirfd(d), e->d_name))
                    remember_fd(p, atoi(e->d_name));
            closedir(d);
            fdinfo_dir = -1;
        }
    }
    if (fdinfo_dir >= 0)
        close(fdinfo_dir);
    close(fd_dir);
}

/* Keep one entry per pid (pids sorted, duplicates allowed), in pid order. */
static void sync_procs(struct gpu_fdinfo_state *st, const int32_t *pids, size_t npids)
{
    struct fdinfo_proc *out = rt_xcalloc(npids, sizeof(*out));
    size_t n = 0, k = 0;
    for (size_t i = 0; i < npids; i++) {
        if (i && pids[i] == pids[i - 1])
            continue;
        while (k < st->n_procs && st->procs[k].pid < pids[i])
            free(st->procs[k++].fds); /* left the job */
        if (k < st->n_procs && st->procs[k].pid == pids[i])
            out[n++] = st->procs[k++];
        else
            out[n++] = (struct fdinfo_proc){.pid = pids[i]};
    }
    while (k < st->n_procs)
        free(st->procs[k++].fds);
    free(st->procs);
    st->procs = out;
    st->n_procs = n;
}

void gpu_fdinfo_scan(struct rt_gpu_collector *c, struct gpu_fdinfo_state *st, const int32_t *pids, size_t npids)
{
    bool any = false;
    for (size_t i = 0; i < c->n_view; i++)
        any = any || (c->view[i].visible && c->view[i].vendor == GPU_AMD);
    if (!any)
        return;
    if (!c->fdinfo_buf)
        c->fdinfo_buf = rt_xmalloc(FDINFO_MAX);
    for (size_t i = 0; i < st->n_clients; i++)
        st->clients[i].seen = false;
    sync_procs(st, pids, npids);
    for (size_t i = 0; i < st->n_procs; i++)
        scan_proc(c, st, &st->procs[i]);
    /* Forget closed clients, after a few calls: one that comes back (a process
     * briefly missing from the job) keeps its baseline. Clients of a device
     * that is lost or hung are kept as they are. */
    size_t w = 0;
    for (size_t i = 0; i < st->n_clients; i++) {
        struct fdinfo_client *cl = &st->clients[i];
        bool visible = cl->slot < c->n_view && c->view[cl->slot].visible;
        if (!cl->seen && visible && ++cl->missed > KEEP_MISSED)
            continue;
        st->clients[w++] = *cl;
    }
    st->n_clients = w;
    st->started = true;
}
