/* Inside cgroup/: which file gives each figure (sources.c), for
 * cgroup.c. */
#ifndef RT_CGROUP_SOURCES_H
#define RT_CGROUP_SOURCES_H

#include "cgroup/cgroup.h"

/* Open the files that give cg's figures, v2 before v1 for each group,
 * relative to cg->dir: fills cg->src and cg->use. */
void rt_cg_sources_open(struct rt_cgroup *cg);

/* Read the sources giving any of `groups`; 0 or -ENODEV (removed). */
int rt_cg_sources_read(struct rt_cgroup *cg, uint32_t groups, struct rt_cg_figures *out);

/* Whether cg's figures `group` come from a v1 hierarchy's file. */
bool rt_cg_sources_v1(const struct rt_cgroup *cg, uint32_t group);

/* rt_cgroup_reset_peak. */
int rt_cg_sources_reset_peak(struct rt_cgroup *cg);

#endif
