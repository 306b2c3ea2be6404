/* Cgroup jobs on the sampler thread: the cgroup opened, its counters taken
 * as the baseline, its end watched; a sample's figures from the deltas of
 * the kernel's counters, whatever the number of processes (docs/jobs.md,
 * "Cgroup jobs"). And a process tree's memory-limited cgroup, read for the
 * OOM kills of its processes. */
#include "sampler/internal.h"

#include "cgroup/make.h"
#include "cgroup/place.h"
#include "rt/util.h"
#include "system/log.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>

/* The registry's readers (StartJob's answer among them) may be reading it. */
static void set_memory_limit(struct rt_sampler *s, struct rt_job *j, uint64_t bytes)
{
    rt_jobs_lock(s->jobs);
    j->memory_limit_bytes = bytes;
    rt_jobs_unlock(s->jobs);
}

/* Which cgroup a job reads: its own, or the one that limits its root's
 * memory (a tree: only its OOM kills). */
static char *cgroup_of(struct rt_sampler *s, struct rt_job *j)
{
    if (j->cgroup)
        return rt_xstrdup(j->cgroup);
    struct rt_cg_paths p;
    if (rt_cg_pid_paths(s->o.roots, j->pid, &p) < 0)
        return NULL;
    struct rt_cg_limits l;
    char *path = NULL;
    if (rt_cg_limits_of(s->o.cg_host, &p, &l) == 0) {
        if (l.mem_max_at) {
            path = rt_xstrdup(l.mem_max_at);
            set_memory_limit(s, j, l.mem_max);
        }
        rt_cg_limits_free(&l);
    }
    rt_cg_paths_free(&p);
    return path;
}

int rt_cgroup_job_begin(struct rt_sampler *s, struct rt_job *j, char *err, size_t errlen)
{
    j->cg_watch = -1;
    if (!s->o.cg_host || s->o.cg_host->mode == RT_CG_MODE_NONE) {
        if (!j->cgroup)
            return 0;
        snprintf(err, errlen, "no cgroup file system is mounted");
        return -ENOENT;
    }
    char *path = cgroup_of(s, j);
    if (!path)
        return 0;
    int r = rt_cgroup_open(&j->cg, s->o.cg_host, path);
    if (r < 0) {
        snprintf(err, errlen, "cannot open the cgroup %s: %s", path, strerror(-r));
        free(path);
        return j->cgroup ? r : 0; /* a tree goes on without its OOM kills */
    }
    j->cg_open = true;
    rt_cgroup_read(&j->cg, &j->cg_last);
    if (j->cgroup && !j->memory_limit_bytes) {
        struct rt_cg_limits l;
        if (rt_cg_limits_of_path(s->o.cg_host, path, &l) == 0) {
            set_memory_limit(s, j, l.mem_max == RT_CG_UNLIMITED ? 0 : l.mem_max);
            rt_cg_limits_free(&l);
        }
    }
    free(path);
    /* A cgroup job without a root ends when its cgroup empties: the kernel
     * says so through cgroup.events; v1 only, the tick asks. */
    if (j->cgroup && j->pid == 0 && s->inotify_fd >= 0)
        j->cg_watch = rt_cgroup_watch(&j->cg, s->inotify_fd);
    return 0;
}

void rt_cgroup_job_end(struct rt_sampler *s, struct rt_job *j)
{
    if (!j->cg_open)
        return;
    if (j->cg_watch >= 0)
        inotify_rm_watch(s->inotify_fd, j->cg_watch);
    j->cg_watch = -1;
    rt_cgroup_close(&j->cg);
    j->cg_open = false;
    free(j->cg_pids);
    j->cg_pids = NULL;
    j->cg_npids = j->cg_pids_cap = 0;
    /* A cgroup made for the job goes with it once empty; processes the
     * command left behind keep it (and are not ours to kill). */
    if (j->cgroup && j->cgroup_made) {
        int r = rt_cg_remove(s->o.cg_host, j->cgroup);
        if (r < 0)
            rt_info("job %" PRIu64 ": its cgroup %s stays: %s", j->id, j->cgroup,
                    r == -EBUSY ? "processes of the job live on in it" : strerror(-r));
    }
}

bool rt_cgroup_job_ended(struct rt_sampler *s, struct rt_job *j)
{
    (void)s;
    return j->cgroup && j->pid == 0 && j->cg_open && rt_cgroup_populated(&j->cg) != 1;
}

static uint64_t delta(uint64_t now, uint64_t before)
{
    return now > before ? now - before : 0;
}

/* Per cent of the interval stalled. */
static double stalled(uint64_t now, uint64_t before, double elapsed)
{
    return (double)delta(now, before) / (elapsed * 1e6) * 100.0;
}

bool rt_cgroup_job_figures(struct rt_sampler *s, struct rt_job *j, double elapsed, struct rt_job_figures *f)
{
    (void)s;
    struct rt_cg_figures now;
    int r = rt_cgroup_read(&j->cg, &now);
    const struct rt_cg_figures *b = &j->cg_last;
    if (!j->cgroup) { /* a tree's memory-limited cgroup: its OOM kills only */
        if (r == 0 && rt_cg_has(&now, RT_CGF_OOM_KILL) && rt_cg_has(b, RT_CGF_OOM_KILL)) {
            f->gates |= RT_GATE_OOM;
            f->oom_kills = (uint32_t)delta(now.ev_oom_kill, b->ev_oom_kill);
        }
        if (r == 0)
            j->cg_last = now;
        return true;
    }
    if (r < 0 && r != -ENODEV)
        return true;
    /* Counters the cgroup had at the last sample and has now. */
    uint32_t both = now.have & b->have;
    if (both & RT_CGF_CPU_SPLIT) {
        f->utime_secs = (double)delta(now.cpu_user_usec, b->cpu_user_usec) / 1e6;
        f->stime_secs = (double)delta(now.cpu_system_usec, b->cpu_system_usec) / 1e6;
    } else if (both & RT_CGF_CPU) {
        f->utime_secs = (double)delta(now.cpu_usage_usec, b->cpu_usage_usec) / 1e6;
    }
    if (both & RT_CGF_IO) {
        f->gates |= RT_GATE_DISK;
        f->disk_read_bytes = delta(now.io_rbytes, b->io_rbytes);
        f->disk_write_bytes = delta(now.io_wbytes, b->io_wbytes);
    }
    if (now.have & RT_CGF_MEM) {
        f->gates |= RT_GATE_CG_MEM;
        f->cg_mem_bytes = now.mem_current;
    }
    if (now.have & RT_CGF_MEM_STAT) {
        f->gates |= RT_GATE_CG_STAT | RT_GATE_MEM;
        f->cg_anon_bytes = now.mem_anon;
        f->cg_file_bytes = now.mem_file;
        f->cg_shmem_bytes = now.mem_shmem;
        f->cg_kernel_bytes = now.have & RT_CGF_MEM_KERNEL ? now.mem_kernel : 0;
        /* What it holds that cannot be reclaimed: the page cache can. */
        f->mem_bytes = f->cg_anon_bytes + f->cg_shmem_bytes + f->cg_kernel_bytes;
    }
    if (now.have & RT_CGF_MEM_PEAK) {
        f->gates |= RT_GATE_CG_PEAK;
        f->cg_peak_bytes = now.mem_peak;
    }
    if (both & RT_CGF_OOM_KILL) {
        f->gates |= RT_GATE_OOM;
        f->oom_kills = (uint32_t)delta(now.ev_oom_kill, b->ev_oom_kill);
    }
    uint32_t psi = RT_CGF_PSI_CPU | RT_CGF_PSI_MEM | RT_CGF_PSI_IO;
    if ((both & psi) == psi) {
        f->gates |= RT_GATE_PSI;
        f->psi_cpu_some = stalled(now.psi_cpu.some_usec, b->psi_cpu.some_usec, elapsed);
        f->psi_mem_some = stalled(now.psi_mem.some_usec, b->psi_mem.some_usec, elapsed);
        f->psi_mem_full = stalled(now.psi_mem.full_usec, b->psi_mem.full_usec, elapsed);
        f->psi_io_some = stalled(now.psi_io.some_usec, b->psi_io.some_usec, elapsed);
        f->psi_io_full = stalled(now.psi_io.full_usec, b->psi_io.full_usec, elapsed);
    }
    if ((both & RT_CGF_THROTTLE) && (now.have & RT_CGF_CPU_MAX) && now.cpu_quota_usec != RT_CG_UNLIMITED) {
        f->gates |= RT_GATE_THROTTLE;
        uint64_t periods = delta(now.nr_periods, b->nr_periods);
        f->throttled_pct = periods ? (double)delta(now.nr_throttled, b->nr_throttled) / (double)periods * 100 : 0;
    }
    j->cg_last = now;
    return r == 0;
}

void rt_cgroup_job_count_from_start(struct rt_job *j)
{
    struct rt_cg_figures *b = &j->cg_last;
    b->cpu_usage_usec = b->cpu_user_usec = b->cpu_system_usec = 0;
    b->io_rbytes = b->io_wbytes = b->io_rios = b->io_wios = 0;
    b->ev_oom_kill = 0;
    double before = (double)rt_real_ns() / 1e9 - j->started_at;
    if (before > 0 && before * 1e9 < (double)j->last_sample_mono_ns)
        j->last_sample_mono_ns -= (uint64_t)(before * 1e9);
}

int rt_cgroup_job_pids(struct rt_job *j)
{
    j->cg_npids = 0;
    if (!j->cg_open)
        return -ENOENT;
    if (!j->cg_pids_cap) {
        j->cg_pids_cap = 64;
        j->cg_pids = rt_xmalloc(j->cg_pids_cap * sizeof(*j->cg_pids));
    }
    for (;;) {
        int r = rt_cgroup_pids(&j->cg, j->cg_pids, j->cg_pids_cap, &j->cg_npids);
        if (r != -E2BIG || j->cg_pids_cap >= 1u << 20)
            return r;
        j->cg_pids_cap *= 4;
        j->cg_pids = rt_xrealloc(j->cg_pids, j->cg_pids_cap * sizeof(*j->cg_pids));
    }
}
