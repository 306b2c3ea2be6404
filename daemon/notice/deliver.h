/* One attempt at telling one target (worker thread): a webhook's POST, a
 * mail handed to sendmail. */
#ifndef RT_NOTICE_DELIVER_H
#define RT_NOTICE_DELIVER_H

#include "notice/message.h"
#include "upload/http.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum rt_deliver_result {
    RT_DELIVER_OK,
    RT_DELIVER_RETRY,     /* may work later: no answer, 5xx, 408, 429, sendmail's EX_TEMPFAIL or a timeout */
    RT_DELIVER_REFUSED,   /* will not: another 4xx, sendmail's other sysexits statuses */
};

/* POST msg->json to url (application/json), no redirects followed; the
 * reply's body is not kept. error: what went wrong, never the URL. */
enum rt_deliver_result rt_deliver_webhook(struct rt_http *h, const char *url, const struct rt_notice_msg *msg,
                                          char *error, size_t errlen);

/* Run `sendmail -t -oi` (sendmail: its path) with a minimal environment,
 * the message on its standard input (To, Subject, Auto-Submitted and a
 * plain UTF-8 text), killed after timeout_ms or at *abort_at_ms (monotonic
 * ms, 0 = none; read while it runs: the worker's stop). */
enum rt_deliver_result rt_deliver_mail(const char *sendmail, const char *address, const struct rt_notice_msg *msg,
                                       unsigned timeout_ms, const _Atomic uint64_t *abort_at_ms, char *error,
                                       size_t errlen);

#endif
