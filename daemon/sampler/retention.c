/* Retention (docs/jobs.md): ended jobs go when they are too old, when their
 * owner has too many, and, while the store is larger than allowed, from the
 * user holding the most above an even share, oldest first. A running job's
 * data never goes, nor host samples a remaining job uses. */
#include "sampler/internal.h"

#include "jobs/usage.h"
#include "rt/util.h"
#include "system/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct doomed {
    uint64_t id;
    struct rt_figlog *fig;
};

/* Sealed host blocks no job uses any more. */
static void drop_unused_host(struct rt_sampler *s)
{
    struct rt_samples *sm = &s->state->samples;
    size_t n;
    struct rt_seg_block hot, *blocks = rt_seglog_blocks(&sm->host, &n, &hot);
    bool *used = rt_xcalloc(n ? n : 1, sizeof(*used));
    rt_jobs_lock(s->jobs);
    for (size_t i = 0; i < s->jobs->n; i++) {
        const struct rt_figlog *fl = s->jobs->v[i]->fig;
        for (size_t k = 0, b = 0; fl && k < fl->nhblocks; k++) {
            while (b < n && blocks[b].first < fl->hblocks[k])
                b++;
            if (b < n && blocks[b].first == fl->hblocks[k])
                used[b] = true;
        }
    }
    rt_jobs_unlock(s->jobs);
    for (size_t b = 0; b < n; b++)
        if (!used[b])
            rt_seglog_drop_block(&sm->host, blocks[b].first);
    free(used);
    free(blocks);
}

struct user {
    uid_t uid;
    double bytes;
    size_t ended;                   /* ended jobs still counted */
};

static struct user *user_of(struct user **v, size_t *n, uid_t uid)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i].uid == uid)
            return &(*v)[i];
    *v = rt_xrealloc(*v, (*n + 1) * sizeof(**v));
    (*v)[*n] = (struct user){.uid = uid};
    return &(*v)[(*n)++];
}

static bool ended(const struct rt_job *j)
{
    return j->state != RT_JOB_RUNNING;
}

/* The oldest ended job to remove for space, or SIZE_MAX: one of the user
 * holding the most among those above an even share of max_bytes. */
static size_t pick_for_space(const struct rt_usage *u, uint64_t max_bytes)
{
    struct user *users = NULL;
    size_t nusers = 0;
    for (size_t i = 0; i < u->njobs; i++) {
        if (u->gone[i])
            continue;
        struct user *us = user_of(&users, &nusers, u->jobs[i]->owner_uid);
        us->bytes += rt_usage_of(u, i);
        us->ended += ended(u->jobs[i]);
    }
    double share = nusers ? (double)max_bytes / (double)nusers : 0;
    const struct user *victim = NULL;
    for (size_t i = 0; i < nusers; i++)
        if (users[i].ended && users[i].bytes > share && (!victim || users[i].bytes > victim->bytes))
            victim = &users[i];
    size_t pick = SIZE_MAX;
    for (size_t i = 0; victim && i < u->njobs && pick == SIZE_MAX; i++) /* ids ascend with age */
        if (!u->gone[i] && ended(u->jobs[i]) && u->jobs[i]->owner_uid == victim->uid)
            pick = i;
    free(users);
    return pick;
}

/* Marks in u->gone what goes, under the jobs lock. */
static void choose(struct rt_sampler *s, struct rt_usage *u, double now)
{
    uint64_t max_age = atomic_load(&s->retention_age), max_bytes = atomic_load(&s->retention_bytes);
    unsigned max_jobs = atomic_load(&s->retention_jobs);
    struct user *users = NULL;
    size_t nusers = 0;
    for (size_t i = u->njobs; i-- > 0;) { /* newest first: the oldest go */
        struct rt_job *j = u->jobs[i];
        if (!ended(j))
            continue;
        struct user *us = user_of(&users, &nusers, j->owner_uid);
        if ((max_age && now - j->ended_at > (double)max_age) || (max_jobs && ++us->ended > max_jobs))
            rt_usage_remove(u, i);
    }
    free(users);
    while (max_bytes && u->total > max_bytes) {
        size_t i = pick_for_space(u, max_bytes);
        if (i == SIZE_MAX) {
            rt_log_once(&s->retention_warned, LOG_WARNING,
                        "retention: the store holds %" PRIu64 " MiB, over its limit of %" PRIu64
                        " MiB, and no user above an even share has an ended job left to remove "
                        "(running jobs are kept)", u->total >> 20, max_bytes >> 20);
            return;
        }
        rt_usage_remove(u, i);
    }
    s->retention_warned = false;
}

void rt_sampler_retention(struct rt_sampler *s)
{
    double now = (double)rt_real_ns() / 1e9;
    drop_unused_host(s);
    struct doomed *doomed = NULL;
    size_t ndoomed = 0;
    rt_jobs_lock(s->jobs);
    size_t n = s->jobs->n;
    struct rt_job **jobs = rt_xmalloc((n ? n : 1) * sizeof(*jobs));
    if (n)
        memcpy(jobs, s->jobs->v, n * sizeof(*jobs));
    struct rt_usage u;
    rt_usage_build(&u, s->state, jobs, n);
    choose(s, &u, now);
    for (size_t i = 0; i < n; i++) {
        if (!u.gone[i])
            continue;
        doomed = rt_xrealloc(doomed, (ndoomed + 1) * sizeof(*doomed));
        doomed[ndoomed++] = (struct doomed){jobs[i]->id, rt_figlog_ref(jobs[i]->fig)};
        rt_jobs_remove(s->jobs, jobs[i]);
        rt_job_free(jobs[i]);
    }
    rt_jobs_unlock(s->jobs);
    rt_usage_free(&u);
    free(jobs);
    for (size_t i = 0; i < ndoomed; i++) {
        rt_state_dir_remove_job(s->state, doomed[i].id, doomed[i].fig);
        rt_figlog_unref(doomed[i].fig);
        rt_info("job %" PRIu64 " removed by the retention policy", doomed[i].id);
    }
    free(doomed);
    if (ndoomed) {
        drop_unused_host(s);
        s->release_wanted = true; /* what they held, given back (sampler.c) */
    }
}
