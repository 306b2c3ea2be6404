/* Which jobs a caller may see, and a JOB parameter (id or name) resolved to
 * one of them. Shared by the job methods and the sample stream. */
#ifndef RT_API_JOB_ACCESS_H
#define RT_API_JOB_ACCESS_H

#include "api/call.h"
#include "cgroup/cgroup.h"
#include "collect/roots.h"
#include "jobs/jobs.h"

#include <stdbool.h>

struct rt_daemon;

bool rt_api_can_see(const struct rt_peer *peer, const struct rt_job *j);
/* NULL when the caller may track cgroup cg, else why not: administrators
 * any; a user one they own in every hierarchy whose processes are all
 * theirs (no other user's process can be seen through it, and only they
 * and root can put processes in it). */
const char *rt_api_may_track_cgroup(const struct rt_peer *peer, const struct rt_roots *roots,
                                    const struct rt_cgroup *cg);
/* The parameters that name a job: its id, or its name (a name resolves
 * among the caller's jobs, or owner_uid's for an administrator). */
#define RT_API_JOB_PARAMS \
    RT_OPT("id", RT_P_INT), RT_OPT("name", RT_P_STRING), \
    {.name = "owner_uid", .type = RT_P_INT, RT_RANGE(0, UINT32_MAX - 1.0)}

/* The job named by the call's RT_API_JOB_PARAMS, visible to the caller,
 * with the registry locked; NULL after replying the error. */
struct rt_job *rt_api_lookup_job(struct rt_call *c);
/* The varlink Job object (rt_job_to_json) with its efficiency and notes
 * (jobs/notes.h, by the configuration's rules) and the upload state the
 * worker knows. Registry locked. */
struct json_object *rt_api_job_json(struct rt_daemon *d, const struct rt_job *j);
/* Without the jobs lock: an ended job's metadata, read from the store into
 * a job object from rt_api_job_json (its "metadata" is null until then). */
void rt_api_fill_metadata(struct rt_daemon *d, struct json_object *job);

#endif
