/* Insight verbs of resource-trackerctl: `report` (a self-contained HTML
 * report of a job) and `recommend` (right-sizing for its next run), and the
 * one-line recommendation other verbs may print. docs/insight.md */
#ifndef RT_INSIGHT_H
#define RT_INSIGHT_H

#include "ctl.h"

#include <json-c/json.h>
#include <stddef.h>

extern const struct ctl_spec ctl_report_spec, ctl_recommend_spec;
int ctl_report(struct ctl *ctl, int argc, char **argv);
int ctl_recommend(struct ctl *ctl, int argc, char **argv);

/* "2 vCPUs, 1024 MiB memory (Slurm: --cpus-per-task=2 --mem=1024M)"
 * for job (a Job object) and up to `history` earlier runs, on a connected
 * client. Returns 0, or an RT_EXIT_* code after printing why. */
int ctl_insight_recommend_line(struct rt_vl_client *c, struct json_object *job, unsigned history, char *buf,
                               size_t size);

#endif
