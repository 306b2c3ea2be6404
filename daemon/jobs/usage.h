/* What each job holds on disk, as retention counts it: its own files
 * (record, metadata, figures) and its share of the host samples it uses,
 * each host block split evenly among the jobs that use it. The sum over
 * all jobs is what the store takes. */
#ifndef RT_JOBS_USAGE_H
#define RT_JOBS_USAGE_H

#include "jobs/state_dir.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_usage_block {
    uint64_t first, bytes;
    uint32_t refs;
};

struct rt_usage {
    size_t njobs;
    struct rt_job **jobs;           /* borrowed, in registry order */
    uint64_t *own;                  /* per job */
    bool *gone;                     /* per job: removed by rt_usage_remove */
    struct rt_usage_block *blocks;  /* host blocks, ascending (the hot one last) */
    size_t nblocks;
    uint64_t total;                 /* what the remaining jobs and their host blocks take */
};

/* Caller holds the jobs lock (file sizes are read under it, once). */
void rt_usage_build(struct rt_usage *u, struct rt_state_dir *s, struct rt_job **jobs, size_t n);
/* Bytes job i counts for: its files and its share of host blocks. */
double rt_usage_of(const struct rt_usage *u, size_t i);
/* Job i leaves the count (its host blocks used by nobody else go too). */
void rt_usage_remove(struct rt_usage *u, size_t i);
void rt_usage_free(struct rt_usage *u);

#endif
