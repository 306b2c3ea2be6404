/* The sample store: one host timeline shared by every job, and each job's
 * figures (docs/jobs.md, "Store").
 *
 *   host/<first>.hot, host/<first>.z       host samples: a sample is stored
 *                                          once, when a job sample first needs it
 *   jobs/<id>/fig-<first>.hot, .z          the job's figures, one record per sample
 *
 * A job's sample is rebuilt on read from its figures and its host sample,
 * byte for byte what the sampler published live (store/job_sample.h). The
 * sampler thread writes; readers on the main thread take what is whole on
 * disk. */
#ifndef RT_STORE_SAMPLES_H
#define RT_STORE_SAMPLES_H

#include "rt/job_figures.h"
#include "store/buf.h"
#include "store/seglog.h"
#include "store/textcode.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RT_HOST_BLOCK 1024          /* host samples per sealed block */
#define RT_FIG_BLOCK 16384          /* job samples per sealed block */

struct rt_samples {
    int jobs_fd;                    /* borrowed */
    int host_fd;
    mode_t file_mode;
    size_t backlog_max;
    struct rt_store_health health;
    struct rt_seglog host;
    /* sampler thread: this tick's host sample */
    const char *tick_text;
    size_t tick_len;
    uint64_t tick_hseq;
    bool tick_stored;
    struct rt_buf tmpl;
    struct rt_i64s nums;
    /* readers: CSV rows whose host part was made from its JSON (the slow
     * way, for a template the CSV map cannot be trusted with), for tests */
    _Atomic uint64_t host_rows_parsed;
};

/* A job's figures, shared by the job and readers (reference counted: a
 * reader keeps it while retention removes the job). */
struct rt_figlog {
    struct rt_seglog log;
    atomic_int refs;
    uint64_t *hblocks;              /* host blocks its samples use, ascending (sampler thread) */
    size_t nhblocks, hblocks_cap;
    uint64_t last_hseq;
};

/* state_fd: the state directory; jobs_fd: its jobs/. backlog_max: bytes
 * kept in memory per log while the disk refuses them. -errno with err. */
int rt_samples_open(struct rt_samples *s, int state_fd, int jobs_fd, mode_t dir_mode, mode_t file_mode,
                    size_t backlog_max, char *err, size_t errlen);
void rt_samples_close(struct rt_samples *s);

/* The figures log of job id (created with its first record). NULL on error. */
struct rt_figlog *rt_samples_job_log(struct rt_samples *s, uint64_t id);
struct rt_figlog *rt_figlog_ref(struct rt_figlog *fl);
void rt_figlog_unref(struct rt_figlog *fl);
/* Remove its files (the job is removed). */
void rt_figlog_remove(struct rt_figlog *fl);

/* Figures of stored samples, handed back to the job layer (which sums them
 * by its rule). */
typedef void (*rt_figures_fn)(void *ctx, const struct rt_job_figures *f);

/* At load: the host blocks the job uses, and the figures of its samples
 * from index `from` on given to fn (the ones after its saved record).
 * Returns the number of samples it has. */
uint64_t rt_samples_job_load(struct rt_samples *s, struct rt_figlog *fl, uint64_t from, rt_figures_fn fn, void *ctx,
                             double interval_secs);

/* Sampler thread: the host sample of this tick (text valid until the next
 * call); it is stored with the first job sample that needs it. */
void rt_samples_host_tick(struct rt_samples *s, const char *text, size_t len);
/* A job's sample. false when it is not kept (the disk is full and the
 * backlog too). */
bool rt_samples_append(struct rt_samples *s, struct rt_figlog *fl, const struct rt_job_figures *f,
                       uint64_t timestamp_ms);
/* The parts of it, for samples that come from elsewhere (migration): a
 * host sample, a job's figures with the host sample they go with, a sample
 * line kept as it was. */
bool rt_samples_store_host(struct rt_samples *s, const char *text, size_t len, uint64_t *hseq);
bool rt_samples_append_at(struct rt_samples *s, struct rt_figlog *fl, const struct rt_job_figures *f, uint64_t hseq,
                          uint64_t timestamp_ms);
bool rt_samples_append_verbatim(struct rt_samples *s, struct rt_figlog *fl, const char *line, size_t len);
/* Seal one full block, the host timeline's first, else of one of the given
 * jobs' (once per tick: blocks that fill together are sealed in turn).
 * false when none is full. */
bool rt_samples_seal_one(struct rt_samples *s, struct rt_figlog *const *figs, size_t n);
/* A job ended: its figures are sealed; with no job running, so is the host
 * timeline's hot block. */
void rt_samples_job_ended(struct rt_samples *s, struct rt_figlog *fl, bool last_running);
/* Write what waits for the disk; true when nothing waits. */
bool rt_samples_flush(struct rt_samples *s, struct rt_figlog *fl);

/* What a job's samples show of the job. */
struct rt_job_view {
    uint64_t id;
    const char *name_json;
    int32_t pid;
};

/* Read samples [from, end) of a job, at most max of them and about
 * max_bytes: JSON lines ('\n' after each) or CSV rows, appended to out.
 * Samples that are damaged or gone are skipped (logged once); reading stops
 * at one not on disk yet. *next: where to go on. Returns samples written.
 * Many CSV rows are made in two halves at once, the second on a thread of
 * its own; a page then holds at most max samples' places (fewer samples
 * when some are skipped). */
size_t rt_samples_read(struct rt_samples *s, struct rt_figlog *fl, const struct rt_job_view *jv, uint64_t from,
                       uint64_t end, size_t max, size_t max_bytes, bool csv, struct rt_buf *out, uint64_t *next);

/* Each sample of a job, as the CSV row is made of it: its figures (as
 * stored, or as a sample kept as it was shows them: shown), timestamp and
 * span, and the CSV values of its host sample (rt_csv_host); valid during
 * the call. */
struct rt_sample_parts {
    struct rt_job_figures f;
    bool shown, has_job;
    uint64_t timestamp_ms;
    double secs;
    const double *host;
    size_t nhost;
};
typedef void rt_samples_each_fn(void *ctx, const struct rt_sample_parts *p);
/* Samples [from, end) of job id (interval_secs: its nominal interval)
 * given to fn in order; damaged ones are skipped (logged once). The samples
 * given. */
uint64_t rt_samples_each(struct rt_samples *s, struct rt_figlog *fl, uint64_t id, double interval_secs,
                         uint64_t from, uint64_t end, rt_samples_each_fn *fn, void *ctx);

#endif
