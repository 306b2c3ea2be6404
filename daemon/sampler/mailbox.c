/* The mailbox between the main thread and the sampler: requests in, events
 * and the latest host sample out, each side woken through an eventfd. */
#include "sampler/internal.h"

#include "rt/util.h"
#include "system/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void rt_sampler_wake_main(struct rt_sampler *s)
{
    uint64_t one = 1;
    if (write(s->out_efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        rt_warn("sampler: cannot signal the main loop: %s", strerror(errno));
}

/* Unlinks the events of quiet ticks before tick, under s->mu. */
static struct rt_sevt *unlink_quiet(struct rt_sampler *s, uint64_t tick)
{
    struct rt_sevt *gone = NULL, *prev = NULL;
    for (struct rt_sevt **pp = &s->out; *pp;) {
        struct rt_sevt *e = *pp;
        if (!e->quiet_tick || e->quiet_tick >= tick) {
            prev = e;
            pp = &e->next;
            continue;
        }
        *pp = e->next;
        e->next = gone;
        gone = e;
    }
    s->out_tail = prev;
    return gone;
}

/* The main loop may sleep for seconds while nobody streams (daemon.c):
 * what it is told then is one tick's samples, the latest, and the events
 * that never go quietly (answers, ends). Its consumers make do with a gap:
 * a job stream reads the samples it missed from the file, StreamJobs shows
 * the state as of the last tick, a host stream the samples from its start. */
void rt_sampler_publish(struct rt_sampler *s, struct rt_sevt *e, bool quiet)
{
    bool sample = e->type == RT_SEVT_HOST || e->type == RT_SEVT_JOB_SAMPLE || e->type == RT_SEVT_TICK_DONE;
    if (quiet && sample && atomic_load(&s->quiet_ticks))
        e->quiet_tick = s->tick_no;
    struct rt_sevt *gone = NULL;
    pthread_mutex_lock(&s->mu);
    if (e->quiet_tick && e->quiet_tick != s->out_quiet_tick) {
        gone = unlink_quiet(s, e->quiet_tick);
        s->out_quiet_tick = e->quiet_tick;
    }
    if (s->out_tail)
        s->out_tail->next = e;
    else
        s->out = e;
    s->out_tail = e;
    pthread_mutex_unlock(&s->mu);
    while (gone) {
        struct rt_sevt *next = gone->next;
        rt_sevt_free(gone);
        gone = next;
    }
    if (!quiet)
        rt_sampler_wake_main(s);
}

struct rt_sevt *rt_sevt_new(enum rt_sevt_type t)
{
    struct rt_sevt *e = rt_xcalloc(1, sizeof(*e));
    e->type = t;
    return e;
}

void rt_sevt_free(struct rt_sevt *e)
{
    if (!e)
        return;
    rt_rcstr_unref(e->json);
    rt_rcstr_unref(e->csv);
    free(e);
}

struct rt_sevt *rt_sampler_take(struct rt_sampler *s)
{
    uint64_t v;
    if (read(s->out_efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        rt_debug("sampler: eventfd read: %s", strerror(errno));
    pthread_mutex_lock(&s->mu);
    struct rt_sevt *e = s->out;
    s->out = s->out_tail = NULL;
    pthread_mutex_unlock(&s->mu);
    return e;
}

struct rt_rcstr *rt_sampler_latest_host(struct rt_sampler *s, uint64_t *tick)
{
    pthread_mutex_lock(&s->mu);
    struct rt_rcstr *r = rt_rcstr_ref(s->latest);
    if (tick)
        *tick = s->latest_tick;
    pthread_mutex_unlock(&s->mu);
    return r;
}

uint64_t rt_sampler_heartbeat(struct rt_sampler *s) { return atomic_load(&s->heartbeat); }
unsigned rt_sampler_gpu_count(struct rt_sampler *s) { return atomic_load(&s->ngpus); }
void rt_sampler_set_quiet_ticks(struct rt_sampler *s, bool quiet) { atomic_store(&s->quiet_ticks, quiet); }
unsigned rt_sampler_gpu_count_amd(struct rt_sampler *s) { return atomic_load(&s->ngpus_amd); }
int rt_sampler_event_fd(struct rt_sampler *s) { return s->out_efd; }

void rt_sampler_submit(struct rt_sampler *s, struct rt_sreq *req)
{
    req->next = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->reqs_tail)
        s->reqs_tail->next = req;
    else
        s->reqs = req;
    s->reqs_tail = req;
    pthread_mutex_unlock(&s->mu);
    uint64_t one = 1;
    if (write(s->req_efd, &one, sizeof(one)) < 0)
        rt_warn("sampler: cannot wake the sampler: %s", strerror(errno));
}

void rt_sreq_free(struct rt_sreq *q)
{
    if (!q)
        return;
    if (q->token) {
        explicit_bzero(q->token, strlen(q->token));
        free(q->token);
    }
    free(q->api_url);
    json_object_put(q->given_gpus);
    free(q);
}

void rt_sampler_drain_requests(struct rt_sampler *s)
{
    uint64_t v;
    if (read(s->req_efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        rt_debug("sampler: request eventfd: %s", strerror(errno));
    for (;;) {
        pthread_mutex_lock(&s->mu);
        struct rt_sreq *q = s->reqs;
        if (q) {
            s->reqs = q->next;
            if (!s->reqs)
                s->reqs_tail = NULL;
        }
        pthread_mutex_unlock(&s->mu);
        if (!q)
            return;
        rt_sampler_handle_request(s, q);
    }
}
