/* How many log lines one user's actions may cause: a token bucket per uid
 * (RT_USER_LOG_BURST at once, then RT_USER_LOG_PER_SEC a second), the rest
 * counted and summed up in one line per uid every RT_USER_LOG_SUMMARY_SECS.
 * A user churning jobs, connections or calls then cannot fill the journal
 * (or its per-unit rate limit) with diagnostics. Job records are not counted
 * (system/events.h). The table is the caller's to lock; rt_log_user() in
 * log.h is the daemon's locked instance. */
#ifndef RT_USER_LOG_H
#define RT_USER_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RT_USER_LOG_BURST 10
#define RT_USER_LOG_PER_SEC 1
#define RT_USER_LOG_SUMMARY_SECS 10

struct rt_user_log_entry {
    uid_t uid;
    double tokens;
    uint64_t refilled_ns;
    unsigned suppressed;
    uint64_t suppressed_since_ns;  /* the first suppressed since the last summary */
};

struct rt_user_log {
    struct rt_user_log_entry *v;
    size_t n, cap;
};

/* Whether a line about uid may be logged at now_ns; if not, it is counted. */
bool rt_user_log_take(struct rt_user_log *t, uid_t uid, uint64_t now_ns);
/* For each uid with lines suppressed RT_USER_LOG_SUMMARY_SECS ago or more:
 * say(uid, count, seconds, ctx), and its count starts again. Entries with
 * nothing to say and a full bucket are forgotten. */
void rt_user_log_summaries(struct rt_user_log *t, uint64_t now_ns,
                           void (*say)(uid_t uid, unsigned count, double secs, void *ctx), void *ctx);
/* When rt_user_log_summaries() next has a line to say; UINT64_MAX: none. */
uint64_t rt_user_log_due(const struct rt_user_log *t);
void rt_user_log_free(struct rt_user_log *t);

#endif
