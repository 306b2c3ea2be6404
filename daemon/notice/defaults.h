/* Each user's own notification targets, for their jobs that name none
 * (`resource-trackerctl notify --set …`): Slurm jobs and containers that
 * the daemon adopts as well as `run` and `start`. Kept in the state
 * directory, notify/UID.json, mode 0600 (webhook URLs are secrets): one
 * small file per user who set any, read when a job of theirs ends. */
#ifndef RT_NOTICE_DEFAULTS_H
#define RT_NOTICE_DEFAULTS_H

#include <json-c/json.h>
#include <sys/types.h>

/* uid's targets (an array of strings, checked again: a damaged file gives
 * none), NULL when none are set. state_fd: the state directory. */
struct json_object *rt_notice_defaults_get(int state_fd, uid_t uid);

/* Replace uid's targets (an array of checked target strings; empty or NULL
 * removes them). 0 or -errno. */
int rt_notice_defaults_set(int state_fd, uid_t uid, struct json_object *targets);

#endif
