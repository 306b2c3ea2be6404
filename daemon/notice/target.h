/* Where a job's end is told: a webhook (an http or https URL that gets a
 * JSON POST) or a mail address (mailto:ADDR, through the system's
 * sendmail). A webhook URL is a secret (Slack's and most others carry their
 * token in the path): it is kept in the job's record only, shown to its
 * owner redacted, and never logged whole. */
#ifndef RT_NOTICE_TARGET_H
#define RT_NOTICE_TARGET_H

#include <stddef.h>

enum rt_notice_kind { RT_NOTICE_WEBHOOK = 1, RT_NOTICE_MAIL };

#define RT_NOTICE_MAX_TARGETS 4     /* per job, per user */
#define RT_NOTICE_TARGET_MAX 2048   /* bytes of one target */

/* The kind of a target, or -EINVAL with why it is refused: a URL must be
 * http:// or https:// with a host and no white space or control characters;
 * a mail address is one plain address (user or user@domain.example: letters,
 * digits and . _ + - in the local part, no query, no second address). */
int rt_notice_target_check(const char *target, char *why, size_t whylen);

/* The target as logs and views may show it: a URL's scheme and host only
 * ("https://hooks.slack.com/…"), a mail address whole. */
void rt_notice_target_redact(const char *target, char *out, size_t size);

/* A mail target's address (after "mailto:"). */
const char *rt_notice_target_address(const char *target);

#endif
