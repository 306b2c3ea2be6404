/* Retention: ended jobs removed by age and by the total size of the store. */
#include "sampler/internal.h"

#include "rt/util.h"
#include "system/log.h"

#include <inttypes.h>
#include <stdlib.h>


void rt_sampler_retention(struct rt_sampler *s)
{
    double now = (double)rt_real_ns() / 1e9;
    uint64_t max_age = atomic_load(&s->retention_age), max_bytes = atomic_load(&s->retention_bytes);
    uint64_t *doomed = NULL;
    size_t ndoomed = 0;
    rt_jobs_lock(s->jobs);
    uint64_t total = 0;
    for (size_t i = 0; i < s->jobs->n; i++)
        total += s->jobs->v[i]->samples_bytes;
    /* Oldest first: ids ascend with age. */
    for (size_t i = 0; i < s->jobs->n;) {
        struct rt_job *j = s->jobs->v[i];
        bool ended = j->state != RT_JOB_RUNNING;
        bool too_old = ended && max_age && now - j->ended_at > (double)max_age;
        bool too_big = ended && max_bytes && total > max_bytes;
        if (!too_old && !too_big) {
            i++;
            continue;
        }
        total -= j->samples_bytes;
        doomed = rt_xrealloc(doomed, (ndoomed + 1) * sizeof(*doomed));
        doomed[ndoomed++] = j->id;
        rt_jobs_remove(s->jobs, j);
        rt_job_free(j);
    }
    rt_jobs_unlock(s->jobs);
    for (size_t i = 0; i < ndoomed; i++) {
        rt_store_remove_job(s->store, doomed[i]);
        rt_info("job %" PRIu64 " removed by the retention policy", doomed[i]);
    }
    free(doomed);
}
