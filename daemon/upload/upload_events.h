/* Upload events worth a journal record. One function per event so the
 * journald MESSAGE_IDs (daemon/system/events.h) can be wired in here alone; for now
 * they log through daemon/system/log.h. Never pass a token or secret. */
#ifndef RT_UPLOAD_EVENTS_H
#define RT_UPLOAD_EVENTS_H

#include <stdint.h>

/* First failure of an episode (later ones are counted, not logged). what:
 * "start run", "upload", "refresh credentials", "finish run". */
void rt_upload_on_failed(uint64_t job_id, const char *run_id, const char *what, const char *error);
/* The first success after rt_upload_on_failed. */
void rt_upload_on_recovered(uint64_t job_id, const char *run_id, unsigned failures);
/* The spool reached its cap: logged once until it is below the cap again. */
void rt_upload_on_spool_full(uint64_t spool_bytes, uint64_t cap);
/* Batches dropped to stay under the cap (data lost, never silently). */
void rt_upload_on_dropped(uint64_t job_id, const char *run_id, uint64_t batches, uint64_t bytes);
/* The run was finished on the Sentinel API. */
void rt_upload_on_finished(uint64_t job_id, const char *run_id, const char *data_source, uint64_t batches);
/* The API rejected the run for good (4xx): the job's spool is dropped. */
void rt_upload_on_abandoned(uint64_t job_id, const char *run_id, const char *error);

#endif
