/* The daemon's streams ("more" calls) as the live verbs read them: host
 * samples and job figures, one reply per tick. */
#ifndef CTL_LIVE_STREAM_H
#define CTL_LIVE_STREAM_H

#include "ctl.h"

/* Connect and start method with "more" (takes params). 0, or an RT_EXIT_*
 * code after printing why. */
int ctl_stream_open(struct ctl *ctl, struct rt_vl_client *c, const char *method,
                    struct json_object *params);
/* The next reply within timeout_ms (< 0: wait): 1 with *reply (the caller
 * puts it), 0 when none is complete yet (or a signal interrupted the wait),
 * or an RT_EXIT_* code after printing why: the connection is lost, the daemon
 * answered with an error or ended the stream. */
int ctl_stream_next(struct rt_vl_client *c, struct json_object **reply, int timeout_ms);

#endif
