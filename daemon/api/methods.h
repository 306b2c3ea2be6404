/* The method tables of daemon/api/, one per area, and what the areas share. */
#ifndef RT_API_METHODS_H
#define RT_API_METHODS_H

#include "api/dispatch.h"

extern const struct rt_method_table rt_service_methods; /* org.varlink.service */
extern const struct rt_method_table rt_host_methods;    /* methods_host.c */
extern const struct rt_method_table rt_job_methods;     /* methods_jobs.c */
extern const struct rt_method_table rt_sample_methods;  /* job_stream.c */
extern const struct rt_method_table rt_series_methods;  /* job_series.c */
extern const struct rt_method_table rt_live_methods;    /* methods_live.c */
extern const struct rt_method_table rt_notify_methods;  /* methods_notify.c */
extern const struct rt_method_table rt_gpu_methods;     /* methods_gpus.c */
extern const struct rt_method_table rt_proc_methods;    /* methods_procs.c */

/* methods_jobs.c: the sampler answered a StartJob, FinishJob or StopJob. */
void rt_job_methods_request_done(struct rt_server *srv, struct rt_sreq *req);

#endif
