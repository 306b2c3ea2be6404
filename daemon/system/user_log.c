#include "system/user_log.h"

#include "rt/util.h"

#include <stdlib.h>

static struct rt_user_log_entry *entry(struct rt_user_log *t, uid_t uid, uint64_t now_ns)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].uid == uid)
            return &t->v[i];
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 8;
        t->v = rt_xrealloc(t->v, t->cap * sizeof(*t->v));
    }
    struct rt_user_log_entry *e = &t->v[t->n++];
    *e = (struct rt_user_log_entry){.uid = uid, .tokens = RT_USER_LOG_BURST, .refilled_ns = now_ns};
    return e;
}

static void refill(struct rt_user_log_entry *e, uint64_t now_ns)
{
    if (now_ns <= e->refilled_ns)
        return;
    e->tokens += (double)(now_ns - e->refilled_ns) / 1e9 * RT_USER_LOG_PER_SEC;
    if (e->tokens > RT_USER_LOG_BURST)
        e->tokens = RT_USER_LOG_BURST;
    e->refilled_ns = now_ns;
}

bool rt_user_log_take(struct rt_user_log *t, uid_t uid, uint64_t now_ns)
{
    struct rt_user_log_entry *e = entry(t, uid, now_ns);
    refill(e, now_ns);
    if (e->tokens >= 1) {
        e->tokens -= 1;
        return true;
    }
    if (!e->suppressed++)
        e->suppressed_since_ns = now_ns;
    return false;
}

void rt_user_log_summaries(struct rt_user_log *t, uint64_t now_ns,
                           void (*say)(uid_t uid, unsigned count, double secs, void *ctx), void *ctx)
{
    for (size_t i = 0; i < t->n;) {
        struct rt_user_log_entry *e = &t->v[i];
        refill(e, now_ns);
        uint64_t since = now_ns - e->suppressed_since_ns;
        if (e->suppressed && since >= (uint64_t)RT_USER_LOG_SUMMARY_SECS * RT_NSEC_PER_SEC) {
            say(e->uid, e->suppressed, (double)since / 1e9, ctx);
            e->suppressed = 0;
        }
        if (!e->suppressed && e->tokens >= RT_USER_LOG_BURST)
            *e = t->v[--t->n];
        else
            i++;
    }
}

uint64_t rt_user_log_due(const struct rt_user_log *t)
{
    uint64_t at = UINT64_MAX;
    for (size_t i = 0; i < t->n; i++) {
        uint64_t due = t->v[i].suppressed_since_ns + (uint64_t)RT_USER_LOG_SUMMARY_SECS * RT_NSEC_PER_SEC;
        if (t->v[i].suppressed && due < at)
            at = due;
    }
    return at;
}

void rt_user_log_free(struct rt_user_log *t)
{
    free(t->v);
    *t = (struct rt_user_log){0};
}
