/* The sampler run on a test's thread through its seam
 * (rt_sampler_test_request, rt_sampler_test_tick). */
#ifndef RT_TEST_SAMPLER_SEAM_H
#define RT_TEST_SAMPLER_SEAM_H

#include "rt/util.h"
#include "sampler/sampler.h"

/* A request about job j; its result (0, or -errno). */
static inline int seam_request(struct rt_sampler *s, enum rt_sreq_type type, struct rt_job *j)
{
    struct rt_sreq *q = rt_xcalloc(1, sizeof(*q));
    q->type = type;
    q->job = j;
    q->job_id = j->id;
    rt_sampler_test_request(s, q);
    int result = 1;
    for (struct rt_sevt *e = rt_sampler_take(s); e;) {
        struct rt_sevt *next = e->next;
        if (e->type == RT_SEVT_REQ_DONE) {
            result = e->req->result;
            rt_sreq_free(e->req);
        }
        rt_sevt_free(e);
        e = next;
    }
    return result;
}

/* One tick, its events dropped. */
static inline void seam_tick(struct rt_sampler *s)
{
    rt_sampler_test_tick(s);
    for (struct rt_sevt *e = rt_sampler_take(s); e;) {
        struct rt_sevt *next = e->next;
        rt_sevt_free(e);
        e = next;
    }
}

#endif
