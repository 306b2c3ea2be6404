/* A sealed block of records: the file a full (or finished) block of the
 * sample store becomes. Records are (template, numbers); runs of records
 * with the same template are stored column by column (each number's
 * differences from the record before, divided by the largest power of ten
 * the column allows, as zigzag varints) and deflated. Columns a CSV row
 * needs go to a stream of their own, so CSV reads inflate only those.
 *
 *   "RTZ1" | crc32 of the rest of the header | first | span |
 *   3 x (compressed, raw) sizes | index stream | CSV columns | other columns
 */
#ifndef RT_STORE_FRAME_H
#define RT_STORE_FRAME_H

#include "store/buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_FRAME_HEADER 44

/* One record: its index in the log, template and numbers. */
struct rt_rec {
    uint64_t index;
    const uint8_t *tmpl;
    size_t tlen;
    const int64_t *v;
    size_t n;
    uint64_t tmpl_id;   /* reading: records with equal ids (from one cursor) have equal templates */
};

/* Marks the columns of a template a CSV row needs (flags[c] = 1). */
typedef void (*rt_csv_cols_fn)(const uint8_t *tmpl, size_t tlen, size_t ncols, uint8_t *flags);

/* recs: ascending indexes. Appends the file image to out. */
void rt_frame_encode(const struct rt_rec *recs, size_t n, rt_csv_cols_fn csv_cols, struct rt_buf *out);

/* The header of an image: false unless it is whole and well-formed. The
 * records have indexes first .. first + span - 1 (some may be missing). */
bool rt_frame_header(const uint8_t *img, size_t len, uint64_t *first, uint32_t *span);

struct rt_frame_run {
    uint64_t first;
    uint32_t nrec;
    const uint8_t *tmpl;
    size_t tlen, ncols;
    int64_t *vals;      /* ncols x nrec, column by column; CSV-only decodes leave others unset */
    bool *csv;          /* per column: one a CSV row needs */
    bool only_csv;      /* decoded for CSV: the other columns are not there */
    uint32_t *csv_cols; /* the columns a CSV row needs */
    size_t ncsv;
};

struct rt_frame {
    uint64_t first;
    uint32_t span;
    struct rt_frame_run *runs;
    size_t nruns;
    uint8_t *streams[3];
    /* Kept from one decode to the next into the same frame (a cursor reads
     * block after block): buffers this large would otherwise be mapped and
     * faulted in again for each block (the daemon's mmap threshold is fixed,
     * system/process_limits.c). */
    size_t stream_cap[3];
    int64_t *pool;
    size_t pool_cap;
};

/* Decode an image (all columns, or only those CSV rows need) into f, zeroed
 * before its first decode; what an earlier decode left in f is replaced.
 * false when it is damaged. */
bool rt_frame_decode(const uint8_t *img, size_t len, bool csv_only, struct rt_frame *f);
/* Record index of a decoded frame into r (numbers copied to vbuf, which
 * must hold the run's columns; decoded for CSV, the other columns of vbuf
 * are left as they were); false when the frame lacks it. */
bool rt_frame_get(const struct rt_frame *f, uint64_t index, int64_t *vbuf, size_t vcap, struct rt_rec *r);
/* Release what f holds, its kept buffers too. */
void rt_frame_free(struct rt_frame *f);

#endif
