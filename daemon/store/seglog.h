/* A numbered log of records (template + numbers, see frame.h) in one
 * directory: the records being written go to a "hot" file, one write(2)
 * per record, so a crash or kill -9 of the daemon loses nothing written;
 * a full block (or one that will not grow: a finished job) is sealed into a
 * compressed file of its own and the hot file starts again.
 *
 *   <prefix><first>.hot   "RTHOT1" header with the first index, then entries:
 *                         0xe5 | kind ('T' template, 'R' record) | length | crc32 | payload
 *   <prefix><first>.z     a sealed block (frame.h)
 *
 * Damage costs only what it touches: a torn last entry is cut off, a bad
 * entry or block is skipped with one log line, and nothing unreadable is
 * ever returned. One writer (the sampler thread); readers on any thread take
 * what is whole on disk, under the log's mutex only long enough to copy
 * where it is. */
#ifndef RT_STORE_SEGLOG_H
#define RT_STORE_SEGLOG_H

#include "store/buf.h"
#include "store/frame.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* Write trouble shared by the logs of one store, logged once. */
struct rt_store_health {
    pthread_mutex_t mu;
    bool write_warned, backlog_warned;
};

struct rt_seglog_opts {
    int dirfd;                  /* borrowed */
    const char *subdir;         /* the log's directory under dirfd, or NULL for dirfd itself */
    const char *prefix;         /* of the file names */
    const char *what;           /* for log lines: "job 7", "host timeline" */
    unsigned block;             /* records per sealed block */
    mode_t mode;
    size_t backlog_max;         /* bytes kept in memory while the disk refuses them */
    rt_csv_cols_fn csv_cols;    /* columns for the CSV stream of sealed blocks */
    struct rt_store_health *health;
};

struct rt_seg_block {
    uint64_t first;
    uint32_t count;             /* index span: records first .. first + count - 1 */
    uint64_t bytes;             /* its file */
    bool damaged;               /* found unreadable (logged once) */
};

struct rt_pending;

struct rt_hot_rec {
    uint64_t index, off;        /* payload offset in the hot file */
    uint32_t len, tid;          /* payload length, template entry it uses */
};

struct rt_seglog {
    struct rt_seglog_opts o;
    char subdir[32], prefix[32], what[64];
    pthread_mutex_t mu;         /* blocks, hot records and fd as readers see them */
    struct rt_seg_block *blocks; /* ascending */
    size_t nblocks, blocks_cap;
    int hot_fd;                 /* -1 until the first record of a block */
    uint64_t hot_first, hot_size;
    struct rt_hot_rec *hot;     /* whole on disk */
    size_t nhot, hot_cap;
    uint64_t *tmpl_off;         /* payload of each template entry, by its number */
    uint32_t *tmpl_len;         /* UINT32_MAX: lost to damage */
    size_t ntmpl, tmpl_cap;
    uint64_t next;              /* index of the next record */

    /* writer only */
    struct rt_buf last_tmpl;    /* template of the hot file's last record */
    uint32_t wntmpl;            /* template entries appended to the hot file */
    bool have_tmpl;             /* last_tmpl is the hot file's latest template entry */
    struct rt_buf backlog;      /* bytes the disk has not taken yet, in order */
    uint64_t backlog_base;      /* hot file offset of backlog byte 0 */
    size_t backlog_done;        /* bytes of it written */
    bool backlog_refused;       /* a record was refused: none is kept until the backlog is written */
    struct rt_pending *pend;    /* its entries */
    size_t npend, pend_cap;
    unsigned seal_retry;        /* records to wait before sealing again after a failure */
};

/* Open (or start) the log: sealed blocks are listed from their headers,
 * the hot file is indexed (a torn tail cut off). 0 or -errno. */
int rt_seglog_open(struct rt_seglog *l, const struct rt_seglog_opts *o);
void rt_seglog_close(struct rt_seglog *l);
/* Remove every file of the log (readers that hold it read no more). */
void rt_seglog_remove_files(struct rt_seglog *l);
/* The hot file's modification time (when its job was last seen). */
void rt_seglog_set_mtime(struct rt_seglog *l, const struct timespec *t);
/* The hot file on disk, for what must survive a power loss. */
int rt_seglog_sync(struct rt_seglog *l);

/* Append a record as number next. hold: only into the backlog (it must not
 * reach the disk before what it refers to). false when the record is not
 * kept: the backlog would grow past its limit, or a record was refused since
 * the backlog was last written (a smaller one would fit, and the samples
 * would have scattered gaps instead of one). */
bool rt_seglog_append(struct rt_seglog *l, const uint8_t *tmpl, size_t tlen, const int64_t *v, size_t n,
                      bool hold);
/* Write what waits in the backlog; true when nothing waits any more. */
bool rt_seglog_flush(struct rt_seglog *l);
bool rt_seglog_has_backlog(const struct rt_seglog *l);
/* Seal the hot records into a block now (a full block, a finished job). */
int rt_seglog_seal(struct rt_seglog *l);
/* A log that will not grow (a finished job's, kept until retention): its
 * list of blocks to its size. */
void rt_seglog_fit(struct rt_seglog *l);
/* The hot block is full and can be sealed (the writer seals one log at a
 * time, so that logs filling up together do not stall one tick). */
bool rt_seglog_full(const struct rt_seglog *l);

/* Records appended (kept), and the index the next one gets. */
uint64_t rt_seglog_count(struct rt_seglog *l);
/* Numbers below index are taken (records lost to damage that others know
 * of): the next record gets index at least. */
void rt_seglog_skip_to(struct rt_seglog *l, uint64_t index);
/* The index after the last record whole on disk: records below it that
 * cannot be read are damaged or removed, not waiting for the disk. */
uint64_t rt_seglog_written(struct rt_seglog *l);
/* Bytes of all its files. */
uint64_t rt_seglog_bytes(struct rt_seglog *l);
/* The sealed blocks, copied (free the result), plus the hot block. */
struct rt_seg_block *rt_seglog_blocks(struct rt_seglog *l, size_t *n, struct rt_seg_block *hot);
/* Remove a sealed block (retention): its records are gone. */
void rt_seglog_drop_block(struct rt_seglog *l, uint64_t first);

/* Reading: records by index through a cursor that keeps the block it
 * decoded last. csv_only: sealed blocks decode only the CSV columns (the
 * others read 0). */
struct rt_seglog_cursor {
    struct rt_seglog *log;
    bool csv_only;
    struct rt_frame frame;      /* decoded sealed block, or empty */
    bool have_frame;
    uint64_t bad_first;         /* a damaged block, not retried by this cursor */
    bool have_bad;
    int hot_fd;                 /* dup of the hot file as it was */
    struct rt_hot_rec *hot;
    size_t nhot;
    uint64_t *tmpl_off;
    uint32_t *tmpl_len;
    size_t ntmpl;
    uint32_t cur_tid;
    uint64_t gen;               /* a new block or template: records' tmpl_id */
    struct rt_buf tmpl, payload;
    int64_t *vbuf;
    size_t vcap;
};
/* The path under the log's directory of its file `first` with ext (".hot", ".z"). */
void rt_seglog_file_name(const struct rt_seglog *l, uint64_t first, const char *ext, char *buf, size_t size);

void rt_seglog_cursor_init(struct rt_seglog_cursor *c, struct rt_seglog *l, bool csv_only);
/* Record index into r (valid until the next call), false when it is not
 * readable (not written yet, removed, or damaged: logged once). */
bool rt_seglog_cursor_get(struct rt_seglog_cursor *c, uint64_t index, struct rt_rec *r);
void rt_seglog_cursor_free(struct rt_seglog_cursor *c);

#endif
