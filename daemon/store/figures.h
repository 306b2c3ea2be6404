/* A job's sample as the store keeps it: its figures (rt/job_figures.h), the
 * host sample it goes with (by number in the host timeline) and its
 * timestamp (ms), as a record of integers; or a migrated sample line kept
 * as it was, when it cannot be rebuilt from those. */
#ifndef RT_STORE_FIGURES_H
#define RT_STORE_FIGURES_H

#include "rt/job_figures.h"
#include "store/frame.h"

#include <json-c/json.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_FIG_TEMPLATE "f2"        /* a figures record */
#define RT_FIG_TEMPLATE_FIRST "f1"  /* one of the first layout: TREE and DISK gates implied */
#define RT_FIG_VERBATIM 'v'         /* "v" + a sample line kept as it was */
/* Numbers of a record: the host sample, timestamp, interval and gates, and
 * each figure at its rt_fig_samples slot. Records of older daemons may have
 * fewer (never fewer than RT_FIG_NUMS_MIN): figures past their end are 0. */
#define RT_FIG_NUMS 44
#define RT_FIG_NUMS_MIN 16

/* The record's numbers (the figures at their precision are kept exactly). */
void rt_figures_encode(const struct rt_job_figures *f, uint64_t hseq, uint64_t timestamp_ms, int64_t v[RT_FIG_NUMS]);
/* false when r is not a figures record. */
bool rt_figures_decode(const struct rt_rec *r, struct rt_job_figures *f, uint64_t *hseq, uint64_t *timestamp_ms);

/* The figures of a sample line (a sample stored before figures were, or
 * kept as it was): memory in whole MiB, no GPU energy. false when it is not
 * a job sample. */
bool rt_figures_from_line(const char *line, size_t len, double interval_secs, struct rt_job_figures *f);
bool rt_figures_from_json(struct json_object *o, double interval_secs, struct rt_job_figures *f);

/* At the precision a sample shows (and the store keeps): 4 places for CPU
 * times, cores and GPU use, 6 for the energy share. */
double rt_figures_round(double v, int places);

#endif
