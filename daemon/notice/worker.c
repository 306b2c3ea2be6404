/* The notification worker: a queue of deliveries (a job's message to one
 * target) and the thread that makes them, with retries. */
#include "notice/notice.h"

#include "notice/deliver.h"
#include "notice/message.h"
#include "notice/target.h"
#include "rt/json.h"
#include "rt/util.h"
#include "system/log.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One job's end, shared by its deliveries. */
struct notice {
    struct json_object *job;
    uid_t owner;
    uint64_t id;
    unsigned refs;
    bool composed;
    char *user;                     /* the owner's name, looked up on the worker thread */
    struct rt_notice_msg msg;       /* made on the worker thread */
};

struct delivery {
    struct delivery *next;
    struct notice *notice;
    char *target;
    unsigned attempt;               /* attempts made */
    uint64_t due_ms;                /* monotonic */
    char error[256];                /* of the last attempt */
};

struct rt_noticer {
    /* configuration (immutable) */
    char *sendmail, *host;
    unsigned attempts, backoff_base_ms, backoff_max_ms, timeout_ms, max_pending;
    /* shared, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct delivery *queue;
    size_t pending;                 /* queued and in flight */
    bool stopping, stopped, full_warned;
    uint64_t stop_deadline_ms;
    _Atomic uint64_t abort_at_ms;   /* ends a transfer in flight at the stop's deadline */
    pthread_t thread;
    /* worker thread only */
    struct rt_http http;
};

static uint64_t now_ms(void)
{
    return rt_mono_ns() / 1000000;
}

static void notice_unref(struct notice *n)
{
    if (--n->refs)
        return;
    json_object_put(n->job);
    rt_notice_msg_free(&n->msg);
    free(n->user);
    free(n);
}

static void delivery_free(struct delivery *d)
{
    explicit_bzero(d->target, strlen(d->target)); /* a webhook URL is a secret */
    free(d->target);
    free(d);
}

/* The owner's name, looked up here: NSS may be slow (LDAP). */
static void compose(struct rt_noticer *w, struct notice *n)
{
    if (n->composed)
        return;
    char buf[4096];
    struct passwd pw, *res = NULL;
    getpwuid_r(n->owner, &pw, buf, sizeof(buf), &res);
    n->user = res ? rt_xstrdup(res->pw_name) : NULL;
    rt_notice_compose(n->job, w->host, n->user, &n->msg);
    n->composed = true;
}

/* The earliest delivery, or NULL. */
static struct delivery *earliest(struct rt_noticer *w)
{
    struct delivery *best = NULL;
    for (struct delivery *d = w->queue; d; d = d->next)
        if (!best || d->due_ms < best->due_ms)
            best = d;
    return best;
}

static void unlink_delivery(struct rt_noticer *w, struct delivery *d)
{
    for (struct delivery **p = &w->queue; *p; p = &(*p)->next)
        if (*p == d) {
            *p = d->next;
            return;
        }
}

static void finish(struct rt_noticer *w, struct delivery *d, bool delivered)
{
    char shown[256];
    rt_notice_target_redact(d->target, shown, sizeof(shown));
    if (delivered)
        rt_debug("notice: job %" PRIu64 ": told %s", d->notice->id, shown);
    else
        rt_log_user(d->notice->owner, LOG_WARNING, "notice: job %" PRIu64 ": cannot tell %s after %u attempt%s: %s",
                    d->notice->id, shown, d->attempt, d->attempt == 1 ? "" : "s", d->error);
    pthread_mutex_lock(&w->mu);
    w->pending--;
    if (w->pending < w->max_pending / 2)
        w->full_warned = false;
    pthread_mutex_unlock(&w->mu);
    notice_unref(d->notice);
    delivery_free(d);
}

static uint64_t backoff_ms(const struct rt_noticer *w, unsigned attempt)
{
    uint64_t ms = w->backoff_base_ms;
    for (unsigned i = 1; i < attempt && ms < w->backoff_max_ms; i++)
        ms *= 2;
    return ms < w->backoff_max_ms ? ms : w->backoff_max_ms;
}

static void attempt(struct rt_noticer *w, struct delivery *d)
{
    compose(w, d->notice);
    d->attempt++;
    d->error[0] = '\0';
    /* "%u": the job's user (an administrator's template for adopted jobs) */
    char target[RT_NOTICE_TARGET_MAX + 1];
    if (strstr(d->target, "%u")) {
        char uid[16];
        snprintf(uid, sizeof(uid), "%u", (unsigned)d->notice->owner);
        const char *user = d->notice->user ? d->notice->user : uid;
        if (!rt_notice_target_expand(d->target, user, target, sizeof(target)) ||
            rt_notice_target_check(target, d->error, sizeof(d->error)) < 0) {
            snprintf(d->error, sizeof(d->error), "the target is no target for user %s", user);
            finish(w, d, false);
            return;
        }
        explicit_bzero(d->target, strlen(d->target));
        free(d->target);
        d->target = rt_xstrdup(target);
        explicit_bzero(target, sizeof(target));
    }
    enum rt_deliver_result r = rt_notice_target_check(d->target, d->error, sizeof(d->error)) == RT_NOTICE_MAIL
                                   ? rt_deliver_mail(w->sendmail, rt_notice_target_address(d->target),
                                                     &d->notice->msg, w->timeout_ms, &w->abort_at_ms, d->error,
                                                     sizeof(d->error))
                                   : rt_deliver_webhook(&w->http, d->target, &d->notice->msg, d->error,
                                                        sizeof(d->error));
    pthread_mutex_lock(&w->mu);
    bool stopping = w->stopping;
    pthread_mutex_unlock(&w->mu);
    if (r == RT_DELIVER_OK || r == RT_DELIVER_REFUSED || d->attempt >= w->attempts || stopping) {
        finish(w, d, r == RT_DELIVER_OK);
        return;
    }
    pthread_mutex_lock(&w->mu);
    d->due_ms = now_ms() + backoff_ms(w, d->attempt);
    d->next = w->queue;
    w->queue = d;
    pthread_mutex_unlock(&w->mu);
}

static void *worker_main(void *arg)
{
    struct rt_noticer *w = arg;
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE); /* a sendmail that exits early: EPIPE, not death */
    pthread_sigmask(SIG_BLOCK, &pipe, NULL);
    pthread_mutex_lock(&w->mu);
    for (;;) {
        struct delivery *d = earliest(w);
        uint64_t now = now_ms();
        if (w->stopping && (!d || now >= w->stop_deadline_ms))
            break;
        if (!d) {
            pthread_cond_wait(&w->cond, &w->mu);
            continue;
        }
        if (d->due_ms > now && !w->stopping) { /* stopping: one last try now */
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            uint64_t wait = d->due_ms - now;
            ts.tv_sec += (time_t)(wait / 1000);
            ts.tv_nsec += (long)(wait % 1000) * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&w->cond, &w->mu, &ts);
            continue;
        }
        unlink_delivery(w, d);
        pthread_mutex_unlock(&w->mu);
        attempt(w, d);
        pthread_mutex_lock(&w->mu);
    }
    /* The stop's budget is spent: what is left is dropped, said once. */
    size_t dropped = 0;
    while (w->queue) {
        struct delivery *d = w->queue;
        w->queue = d->next;
        notice_unref(d->notice);
        delivery_free(d);
        dropped++;
    }
    w->pending -= dropped;
    pthread_mutex_unlock(&w->mu);
    if (dropped)
        rt_warn("notice: %zu notification%s not sent: the daemon stopped", dropped, dropped == 1 ? "" : "s");
    return NULL;
}

static unsigned or_default(unsigned v, unsigned dflt)
{
    return v ? v : dflt;
}

struct rt_noticer *rt_noticer_new(const struct rt_notice_config *cfg)
{
    struct rt_noticer *w = rt_xcalloc(1, sizeof(*w));
    w->sendmail = rt_xstrdup(cfg->sendmail && *cfg->sendmail ? cfg->sendmail : "/usr/sbin/sendmail");
    w->host = rt_xstrdup(cfg->host && *cfg->host ? cfg->host : "localhost");
    w->attempts = or_default(cfg->attempts, 4);
    w->backoff_base_ms = or_default(cfg->backoff_base_ms, 5000);
    w->backoff_max_ms = or_default(cfg->backoff_max_ms, 300000);
    w->timeout_ms = or_default(cfg->timeout_ms, 15000);
    w->max_pending = or_default(cfg->max_pending, 1024);
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (rt_http_init(&w->http, w->timeout_ms, w->timeout_ms, &w->abort_at_ms) < 0 ||
        pthread_create(&w->thread, NULL, worker_main, w) != 0) {
        rt_err("notice: cannot start the notification worker");
        w->stopped = true;
        rt_noticer_free(w);
        return NULL;
    }
    return w;
}

int rt_noticer_send(struct rt_noticer *w, struct json_object *job, uid_t owner, const char *const *targets,
                    size_t ntargets)
{
    if (!ntargets)
        return 0;
    pthread_mutex_lock(&w->mu);
    if (w->stopping || w->pending + ntargets > w->max_pending) {
        bool warn = !w->full_warned && !w->stopping;
        w->full_warned = true;
        pthread_mutex_unlock(&w->mu);
        if (warn)
            rt_warn("notice: %u notifications wait already: new ones are dropped until they are sent",
                    w->max_pending);
        return -ENOSPC;
    }
    struct notice *n = rt_xcalloc(1, sizeof(*n));
    json_object_deep_copy(job, &n->job, NULL);
    n->owner = owner;
    int64_t id = 0;
    rt_json_get_i64(job, "id", &id);
    n->id = (uint64_t)id;
    uint64_t now = now_ms();
    for (size_t i = 0; i < ntargets; i++) {
        struct delivery *d = rt_xcalloc(1, sizeof(*d));
        d->notice = n;
        d->target = rt_xstrdup(targets[i]);
        d->due_ms = now;
        d->next = w->queue;
        w->queue = d;
        n->refs++;
    }
    w->pending += ntargets;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

size_t rt_noticer_pending(struct rt_noticer *w)
{
    pthread_mutex_lock(&w->mu);
    size_t n = w->pending;
    pthread_mutex_unlock(&w->mu);
    return n;
}

void rt_noticer_stop(struct rt_noticer *w, int timeout_ms)
{
    pthread_mutex_lock(&w->mu);
    if (w->stopped) {
        pthread_mutex_unlock(&w->mu);
        return;
    }
    w->stopped = w->stopping = true;
    w->stop_deadline_ms = now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
    w->abort_at_ms = w->stop_deadline_ms;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
}

void rt_noticer_free(struct rt_noticer *w)
{
    if (!w)
        return;
    rt_noticer_stop(w, 0);
    rt_http_cleanup(&w->http);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->mu);
    free(w->sendmail);
    free(w->host);
    free(w);
}
