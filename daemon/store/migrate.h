/* State directories written before the sample store: a job's
 * samples.jsonl (one JSON sample per line) moves into the store once, when
 * the daemon loads it. Each line is split into a host sample (shared with
 * the other jobs' lines of the same tick) and the job's figures, and kept
 * only if the two rebuild the line byte for byte; otherwise the line is kept
 * as it was. Lines that are not JSON samples are dropped with a log line.
 * The old file goes only once the new records are on disk: a crash
 * meanwhile migrates the job again. */
#ifndef RT_STORE_MIGRATE_H
#define RT_STORE_MIGRATE_H

#include "store/samples.h"

#include <stdint.h>

struct rt_migration; /* host samples already stored, to share them */

struct rt_migration *rt_migration_new(void);
void rt_migration_free(struct rt_migration *m);

struct rt_migrate_job {
    uint64_t id;
    const char *name_json;
    int32_t pid;
    double interval_secs;
    bool ended;
    uint64_t replay_from;           /* samples after the job's record: given to fn */
    rt_figures_fn fn;
    void *ctx;
};

/* Migrate jobs/<id>/samples.jsonl; its figures log, or NULL (the file stays
 * and the job has no samples this time). */
struct rt_figlog *rt_migrate_job(struct rt_samples *s, struct rt_migration *m, const struct rt_migrate_job *j);

#endif
