/* Notifications at the end of a job: a worker thread of its own that posts
 * webhooks (libcurl) and hands mail to the system's sendmail, so that no
 * slow receiver holds up the main or the sampler thread (docs/admin.md).
 *
 * Each target of a job is one delivery, tried up to `attempts` times with
 * doubling waits between; a webhook's 4xx answer (but 408 and 429) and
 * sendmail's permanent exit statuses are not tried again. A delivery that
 * fails for good is logged once, its URL redacted (target.h). Deliveries
 * live in memory only: what is pending when the daemon stops is tried once
 * more within the stop's budget, then dropped with one log line. All
 * functions are thread-safe. */
#ifndef RT_NOTICE_H
#define RT_NOTICE_H

#include <json-c/json.h>
#include <stddef.h>
#include <sys/types.h>

struct rt_notice_config {
    const char *sendmail;          /* the sendmail to run; NULL or "" = /usr/sbin/sendmail */
    const char *host;              /* this host's name, for the messages */
    /* Knobs with production defaults when 0. */
    unsigned attempts;             /* per delivery: 4 */
    unsigned backoff_base_ms;      /* the wait after the first failure, doubling: 5000 */
    unsigned backoff_max_ms;       /* 300000 */
    unsigned timeout_ms;           /* one attempt (connect, send, answer; sendmail's run): 15000 */
    unsigned max_pending;          /* deliveries waiting at most (more are refused): 1024 */
};

struct rt_noticer;

/* Starts the thread; NULL (logged) when it cannot. */
struct rt_noticer *rt_noticer_new(const struct rt_notice_config *cfg);

/* Tell each target (webhook URLs and mailto: addresses, checked by the
 * caller with rt_notice_target_check) that a job ended. job: its JSON as
 * GetJob shows it (copied); owner: whose name the message shows (looked up
 * on the worker thread). 0, or -ENOSPC when too many deliveries wait (logged
 * once until the queue drains). */
int rt_noticer_send(struct rt_noticer *n, struct json_object *job, uid_t owner, const char *const *targets,
                    size_t ntargets);

/* Deliveries queued or in flight. */
size_t rt_noticer_pending(struct rt_noticer *n);

/* Try what is pending once more for at most timeout_ms, then join the
 * thread. Idempotent. */
void rt_noticer_stop(struct rt_noticer *n, int timeout_ms);
/* Stops (with a 0 ms budget when not stopped yet) and frees. */
void rt_noticer_free(struct rt_noticer *n);

#endif
