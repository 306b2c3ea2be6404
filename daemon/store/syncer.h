/* fsync off the request path. A file written with write(2) is in the page
 * cache, which survives a crash or kill -9 of the daemon; fsync makes it
 * survive the machine's crash too, at ≈ 1 ms each. A job's files are written
 * before StartJob and FinishJob answer and synced here just after, on a
 * thread of its own (started with the first file), so neither the client
 * nor the sampler waits for the disk (docs/jobs.md, "Durability"). */
#ifndef RT_STORE_SYNCER_H
#define RT_STORE_SYNCER_H

#include <stdbool.h>
#include <stdint.h>

struct rt_syncer;

struct rt_syncer *rt_syncer_new(void);
/* fsync dirfd/name (none when name is NULL), then dirfd itself, soon, in the
 * order added. dirfd is duplicated. A file gone meanwhile is skipped. */
void rt_syncer_add(struct rt_syncer *y, int dirfd, const char *name);
/* Return once everything added before is synced. */
void rt_syncer_wait(struct rt_syncer *y);
/* Nothing waits to be synced. */
bool rt_syncer_idle(struct rt_syncer *y);
/* Files synced so far (tests). */
uint64_t rt_syncer_done(struct rt_syncer *y);
/* Sync what waits, end the thread, free. */
void rt_syncer_free(struct rt_syncer *y);

#endif
