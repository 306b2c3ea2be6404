/* Where a job's end is told: a webhook (an http or https URL that gets a
 * JSON POST) or a mail address (mailto:ADDR, through the system's
 * sendmail). A webhook URL is a secret (Slack's and most others carry their
 * token in the path): it is kept in the job's record only, shown to its
 * owner redacted, and never logged whole. */
#ifndef RT_NOTICE_TARGET_H
#define RT_NOTICE_TARGET_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

enum rt_notice_kind { RT_NOTICE_WEBHOOK = 1, RT_NOTICE_MAIL };

#define RT_NOTICE_MAX_TARGETS 4     /* per job, per user */
#define RT_NOTICE_TARGET_MAX 2048   /* bytes of one target */

/* The kind of a target, or -EINVAL with why it is refused: a URL must be
 * http:// or https:// with a host and no white space or control characters;
 * a mail address is one plain address (user or user@domain.example: letters,
 * digits and . _ + - in the local part, no query, no second address). */
int rt_notice_target_check(const char *target, char *why, size_t whylen);

/* A list of targets (a JSON array of strings): at most
 * RT_NOTICE_MAX_TARGETS, each checked, none twice. 0, or -EINVAL with why
 * (why may be NULL). */
int rt_notice_targets_check(struct json_object *targets, char *why, size_t whylen);

/* Where a job's end goes, the first that has any: its own targets, its
 * owner's defaults, and for a job the daemon adopted (a Slurm job, a
 * container) the administrator's template (notify.adopted: "%u" is the
 * user, expanded when it is sent), but that one only when every_job or the
 * job failed or got a note. A new reference, or NULL for no one. */
struct json_object *rt_notice_targets_for(struct json_object *own, struct json_object *defaults, bool adopted,
                                          const char *adopted_template, bool every_job, bool failed_or_noted);

/* A target with each "%u" replaced by user (into out): false when it does
 * not fit. */
bool rt_notice_target_expand(const char *target, const char *user, char *out, size_t size);

/* The target as logs and views may show it: a URL's scheme and host only
 * ("https://hooks.slack.com/…"), a mail address whole. */
void rt_notice_target_redact(const char *target, char *out, size_t size);

/* A mail target's address (after "mailto:"). */
const char *rt_notice_target_address(const char *target);

#endif
