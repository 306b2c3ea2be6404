#include "upload/upload_events.h"

#include "system/events.h"
#include "system/log.h"

#include <stdio.h>

/* Journal records with the upload MESSAGE_IDs (daemon/system/events.h). */
void rt_upload_on_failed(uint64_t job_id, const char *run_id, const char *what, const char *error)
{
    char id[24];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)job_id);
    struct rt_event_job j = {.id = id, .owner_uid = RT_EVENT_UID_UNKNOWN};
    struct rt_upload_failure f = {.stage = what, .run_id = run_id, .error = error};
    rt_event_upload_failed(&j, &f);
}

void rt_upload_on_recovered(uint64_t job_id, const char *run_id, unsigned failures)
{
    char id[24];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)job_id);
    struct rt_event_job j = {.id = id, .owner_uid = RT_EVENT_UID_UNKNOWN};
    rt_event_upload_recovered(&j, run_id, failures, 0);
}

void rt_upload_on_spool_full(uint64_t spool_bytes, uint64_t cap)
{
    rt_warn("upload: spool full (%llu bytes, cap %llu): dropping the oldest batches of finished jobs first",
            (unsigned long long)spool_bytes, (unsigned long long)cap);
}

void rt_upload_on_dropped(uint64_t job_id, const char *run_id, uint64_t batches, uint64_t bytes)
{
    rt_warn("upload: job %llu (run %s): dropped %llu unsent batches (%llu bytes) to stay under the spool cap",
            (unsigned long long)job_id, run_id && *run_id ? run_id : "-", (unsigned long long)batches,
            (unsigned long long)bytes);
}

void rt_upload_on_finished(uint64_t job_id, const char *run_id, const char *data_source, uint64_t batches)
{
    rt_info("upload: job %llu (run %s): finished, data %s, %llu batches", (unsigned long long)job_id,
            run_id, data_source, (unsigned long long)batches);
}

void rt_upload_on_abandoned(uint64_t job_id, const char *run_id, const char *error)
{
    rt_err("upload: job %llu (run %s): rejected by the API (%s); giving up, its spooled data is dropped",
           (unsigned long long)job_id, run_id && *run_id ? run_id : "-", error);
}
