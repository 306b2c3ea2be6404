#include "proc/ptree.h"

#include "rt/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint64_t rt_boot_ticks(void)
{
    return rt_boot_ns() / (RT_NSEC_PER_SEC / (uint64_t)rt_clk_tck());
}

static void table_clear(struct rt_ptable *t)
{
    rt_pidmap_clear(&t->map);
    t->n = 0;
}

static void table_free(struct rt_ptable *t)
{
    rt_pidmap_free(&t->map);
    free(t->v);
    memset(t, 0, sizeof(*t));
}

static struct rt_ptrack *table_find(struct rt_ptable *t, int32_t pid)
{
    uint32_t i;
    return rt_pidmap_get(&t->map, pid, &i) ? &t->v[i] : NULL;
}

static struct rt_ptrack *table_add(struct rt_ptable *t, int32_t pid)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 32;
        t->v = rt_xrealloc(t->v, t->cap * sizeof(*t->v));
    }
    struct rt_ptrack *p = &t->v[t->n];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    rt_pidmap_put(&t->map, pid, (uint32_t)t->n++);
    return p;
}

static void push(int32_t **v, size_t *n, size_t *cap, int32_t pid)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *v = rt_xrealloc(*v, *cap * sizeof(**v));
    }
    (*v)[(*n)++] = pid;
}

/* PSS of a process: read when due (or already read this tick for another
 * job), else the last read moved along with RSS. */
static uint64_t pss_of(struct rt_ptree *t, struct rt_proc_cache *c, struct rt_ptrack *p,
                       const struct rt_pinfo **pi, uint64_t rss, uint64_t now,
                       struct rt_ptree_result *out)
{
    const struct rt_ptrack *old = table_find(&t->prev, p->pid);
    if (old && old->starttime == p->starttime)
        p->pss = old->pss;
    uint32_t kids = (uint32_t)(*pi)->kids_n;
    bool cached = (*pi)->have & RT_PI_PSS;
    if (cached || rt_pss_due(&p->pss, now, kids, rss)) {
        *pi = rt_proc_cache_get(c, p->pid, RT_PI_PSS);
        rt_pss_update(&p->pss, (*pi)->pss_ok, (*pi)->pss_bytes, rss, now, (*pi)->pss_cost_ns, kids);
        out->pss_reads += !cached;
    }
    return rt_pss_estimate(&p->pss, rss);
}

/* The process's RSS high-water mark. The kernel's VmHWM is the larger of
 * the RSS now and the mark it keeps, which moves only after RSS grew; RSS
 * grows by page faults. With no fault since the last read, the mark is that
 * read's or the RSS now, whichever is larger, and /proc/PID/status (the
 * largest of the files read for a process) is left unread. It is read at
 * least every 10 s anyway: RSS can also grow without a fault of the
 * process's own (khugepaged filling a huge page, another process writing
 * into its memory). */
#define HWM_MAX_AGE_NS (10ULL * 1000000000ULL)

static void hwm_of(struct rt_ptree *t, struct rt_proc_cache *c, struct rt_ptrack *p, const struct rt_pinfo **pi,
                   uint64_t rss, uint64_t now)
{
    const struct rt_ptrack *old = table_find(&t->prev, p->pid);
    uint64_t faults = (*pi)->st.faults;
    if (old && old->starttime == p->starttime && old->hwm_ok && old->hwm_faults == faults &&
        now - old->hwm_at_ns < HWM_MAX_AGE_NS && !((*pi)->have & RT_PI_HWM)) {
        p->hwm_ok = true;
        p->hwm = old->hwm > rss ? old->hwm : rss;
        p->hwm_faults = faults;
        p->hwm_at_ns = old->hwm_at_ns;
        return;
    }
    *pi = rt_proc_cache_get(c, p->pid, RT_PI_HWM);
    p->hwm_ok = (*pi)->hwm_ok;
    p->hwm = (*pi)->hwm_bytes;
    p->hwm_faults = faults;
    p->hwm_at_ns = now;
}

/* May the job's reader see this process's I/O, PSS and GPU use? The owner
 * of its /proc files is read on every scan: it changes with the effective
 * ids and when the process stops being dumpable (a setuid exec). Its real
 * and saved ids are read when it is first seen and when that owner changes;
 * only a privileged process can change them otherwise. */
static bool readable(struct rt_ptree *t, struct rt_proc_cache *c, struct rt_ptrack *p, const struct rt_pinfo **pi)
{
    if (t->reader.all)
        return true;
    /* A zombie has no memory map: its files belong to root whatever it was,
     * and the kernel judges it by its ids alone. */
    bool zombie = (*pi)->st.state == 'Z';
    *pi = rt_proc_cache_get(c, p->pid, RT_PI_OWNER);
    if (!(*pi)->owner_ok)
        return false; /* gone meanwhile: it counts no more */
    p->owner_uid = (*pi)->owner_uid;
    p->owner_gid = (*pi)->owner_gid;
    const struct rt_ptrack *old = table_find(&t->prev, p->pid);
    if (old && old->starttime == p->starttime && old->owner_uid == p->owner_uid &&
        old->owner_gid == p->owner_gid) {
        p->ids_ok = old->ids_ok;
    } else {
        *pi = rt_proc_cache_get(c, p->pid, RT_PI_CREDS);
        p->ids_ok = (*pi)->creds_ok && rt_reader_ids_match(&t->reader, &(*pi)->creds);
    }
    return p->ids_ok && (zombie || rt_reader_owns(&t->reader, p->owner_uid, p->owner_gid));
}

/* The reaper as a node of its own: its children are walked, and of its
 * counters only cutime/cstime (what it reaped) are kept. */
static void walk_reaper(struct rt_ptree *t, struct rt_proc_cache *c, size_t *sp)
{
    const struct rt_pinfo *pi = rt_proc_cache_get(c, t->reaper_pid, RT_PI_KIDS);
    if (!pi || pi->st.starttime != t->reaper_starttime || table_find(&t->cur, t->reaper_pid))
        return; /* gone (the job ends with its root anyway), or reused */
    struct rt_ptrack *p = table_add(&t->cur, t->reaper_pid);
    p->reaper = true;
    p->ppid = pi->st.ppid;
    p->starttime = pi->st.starttime;
    p->u = pi->st.cutime;
    p->s = pi->st.cstime;
    size_t nk;
    const int32_t *kids = rt_proc_cache_kids(c, pi, &nk);
    for (size_t i = 0; i < nk; i++)
        push(&t->stack, sp, &t->stack_cap, kids[i]);
}

/* Walk the tree from the root (and the reaper) into t->cur; fills memory
 * figures in out. */
static void walk(struct rt_ptree *t, struct rt_proc_cache *c, struct rt_ptree_result *out)
{
    uint64_t now = rt_mono_ns();
    table_clear(&t->cur);
    t->npids = 0;
    size_t sp = 0;
    push(&t->stack, &sp, &t->stack_cap, t->root_pid);
    if (t->reaper_pid > 0)
        walk_reaper(t, c, &sp);
    while (sp) {
        int32_t pid = t->stack[--sp];
        if (table_find(&t->cur, pid))
            continue; /* already visited (racy reads can repeat a child) */
        const struct rt_pinfo *pi = rt_proc_cache_get(c, pid, RT_PI_KIDS);
        if (!pi)
            continue;
        if (pid == t->root_pid && pi->st.starttime != t->root_starttime)
            continue; /* the PID was reused: not our root */
        struct rt_ptrack *p = table_add(&t->cur, pid);
        out->nprocs++;
        p->ppid = pi->st.ppid;
        p->starttime = pi->st.starttime;
        p->u = pi->st.utime + pi->st.cutime;
        p->s = pi->st.stime + pi->st.cstime;
        p->readable = readable(t, c, p, &pi);
        out->unreadable += !p->readable;
        if (p->readable) {
            pi = rt_proc_cache_get(c, pid, RT_PI_IO);
            p->io_ok = pi->io_ok;
            p->rb = pi->read_bytes;
            p->wb = pi->write_bytes;
        }
        if (pid == t->root_pid) {
            out->root_alive = true;
            out->root_zombie = pi->st.state == 'Z';
            /* Field 52 is shown to those who may read the process only. */
            out->root_exit_status = out->root_zombie && p->readable ? pi->st.exit_code : -1;
        }
        uint64_t rss = pi->st.rss_pages * (uint64_t)rt_page_size();
        out->rss_bytes += rss;
        /* Its peak between samples, which no sample of the RSS shows. */
        hwm_of(t, c, p, &pi, rss, now);
        if (p->hwm_ok) {
            out->hwm_known = true;
            if (p->hwm > out->max_hwm_bytes)
                out->max_hwm_bytes = p->hwm;
        }
        if (t->with_pss)
            out->pss_bytes += p->readable ? pss_of(t, c, p, &pi, rss, now, out) : rss;
        if (p->readable)
            push(&t->pids, &t->npids, &t->pids_cap, pid);
        size_t nk;
        const int32_t *kids = rt_proc_cache_kids(c, pi, &nk);
        for (size_t i = 0; i < nk; i++)
            push(&t->stack, &sp, &t->stack_cap, kids[i]);
    }
}

int rt_ptree_init(struct rt_ptree *t, struct rt_proc_cache *c, int32_t root_pid,
                  uint64_t root_starttime, bool with_pss, const struct rt_reader *reader)
{
    memset(t, 0, sizeof(*t));
    t->root_pid = root_pid;
    t->root_starttime = root_starttime;
    t->with_pss = with_pss;
    t->reader = reader ? *reader : (struct rt_reader){.all = true};
    t->job_start_ticks = rt_boot_ticks();
    struct rt_ptree_result r = {0};
    walk(t, c, &r);
    if (!r.root_alive) {
        rt_ptree_free(t);
        return -ENOENT;
    }
    return 0;
}

void rt_ptree_set_reaper(struct rt_ptree *t, int32_t pid, uint64_t starttime)
{
    t->reaper_pid = pid;
    t->reaper_starttime = starttime;
}

void rt_ptree_free(struct rt_ptree *t)
{
    table_free(&t->cur);
    table_free(&t->prev);
    free(t->stack);
    free(t->pids);
    memset(t, 0, sizeof(*t));
}

static uint64_t grow(uint64_t now, uint64_t before)
{
    return now > before ? now - before : 0;
}

/* Does the process we knew still exist (same starttime), though outside the tree?
 * A zombie still in the tree stays on its parent's children list, so one found
 * only here has left the tree. */
static bool still_alive(struct rt_proc_cache *c, const struct rt_ptrack *old)
{
    const struct rt_pinfo *pi = rt_proc_cache_get(c, old->pid, 0);
    return pi && pi->st.starttime == old->starttime;
}

void rt_ptree_scan(struct rt_ptree *t, struct rt_proc_cache *c, struct rt_ptree_result *out)
{
    memset(out, 0, sizeof(*out));
    out->root_exit_status = -1;
    /* The previous scan becomes prev; cur is rebuilt. */
    struct rt_ptable tmp = t->prev;
    t->prev = t->cur;
    t->cur = tmp;
    walk(t, c, out);

    /* Processes that vanished since the last scan: if reaped by a tracked
     * ancestor, that ancestor's counters now include their final totals. */
    for (size_t i = 0; i < t->prev.n; i++) {
        struct rt_ptrack *old = &t->prev.v[i];
        struct rt_ptrack *now = table_find(&t->cur, old->pid);
        if (now && now->starttime == old->starttime)
            continue;
        if (still_alive(c, old))
            continue; /* re-parented out of the tree: nothing to take back */
        int32_t anc = old->ppid;
        for (size_t hops = 0; hops < t->prev.n; hops++) {
            struct rt_ptrack *a = table_find(&t->cur, anc);
            if (a) { /* and what it had still to take back of its own children */
                a->debit_u += (int64_t)old->u + old->debit_u;
                a->debit_s += (int64_t)old->s + old->debit_s;
                if (old->io_ok) {
                    a->debit_rb += (int64_t)old->rb + old->debit_rb;
                    a->debit_wb += (int64_t)old->wb + old->debit_wb;
                }
                break;
            }
            struct rt_ptrack *dead = table_find(&t->prev, anc);
            if (!dead)
                break; /* reaped outside the tree: its parent's counters never saw it */
            anc = dead->ppid;
        }
    }

    for (size_t i = 0; i < t->cur.n; i++) {
        struct rt_ptrack *p = &t->cur.v[i];
        struct rt_ptrack *old = table_find(&t->prev, p->pid);
        uint64_t bu = 0, bs = 0, brb = 0, bwb = 0;
        if (old && old->starttime == p->starttime) {
            bu = old->u;
            bs = old->s;
            brb = old->rb;
            bwb = old->wb;
            if (!old->io_ok)
                brb = p->rb, bwb = p->wb;
            if (!p->io_ok && old->io_ok) {
                /* Unreadable this time (it is exiting): keep the last values,
                 * so that what was counted is taken back when it is reaped. */
                p->rb = old->rb;
                p->wb = old->wb;
                p->io_ok = true;
            }
            p->debit_u += old->debit_u;
            p->debit_s += old->debit_s;
            p->debit_rb += old->debit_rb;
            p->debit_wb += old->debit_wb;
        } else if (p->starttime < t->job_start_ticks) {
            /* Existed before tracking began but not seen yet: baseline now. */
            bu = p->u, bs = p->s, brb = p->rb, bwb = p->wb;
        }
        /* A child reaped after this process was read (in the same scan)
         * shows in its counters only at the next scan: what they do not
         * show yet is taken from their next growth, not forgotten. */
        int64_t du = (int64_t)grow(p->u, bu) - p->debit_u;
        int64_t ds = (int64_t)grow(p->s, bs) - p->debit_s;
        out->d_utime += du > 0 ? (uint64_t)du : 0;
        out->d_stime += ds > 0 ? (uint64_t)ds : 0;
        p->debit_u = du < 0 ? -du : 0;
        p->debit_s = ds < 0 ? -ds : 0;
        if (p->io_ok) {
            int64_t drb = (int64_t)grow(p->rb, brb) - p->debit_rb;
            int64_t dwb = (int64_t)grow(p->wb, bwb) - p->debit_wb;
            out->d_read_bytes += drb > 0 ? (uint64_t)drb : 0;
            out->d_write_bytes += dwb > 0 ? (uint64_t)dwb : 0;
            p->debit_rb = drb < 0 ? -drb : 0;
            p->debit_wb = dwb < 0 ? -dwb : 0;
        }
    }
}
