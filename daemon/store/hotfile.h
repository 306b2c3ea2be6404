/* The hot file of a log (seglog.h): its entries, how a file's bytes are
 * indexed (damage skipped), and the file I/O the log shares. */
#ifndef RT_STORE_HOTFILE_H
#define RT_STORE_HOTFILE_H

#include "store/buf.h"
#include "store/seglog.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HOT_MAGIC "RTHOT1\0\0"
#define HOT_HEADER 16
#define ENTRY_MAGIC 0xe5
#define ENTRY_HEADER 10             /* magic, kind, payload length, crc32 */
#define ENTRY_MAX (1u << 20)        /* a sample line kept as it was is the largest */

struct rt_hot_scan {
    uint64_t first;
    struct rt_hot_rec *recs;
    size_t nrecs;
    uint64_t *toff;
    uint32_t *tlen;
    size_t ntmpl;
    size_t valid_end;               /* bytes up to the end of the last whole entry */
    bool damaged;
    bool header_damaged;            /* its header is not what its name says: rewritten when kept */
};

ssize_t rt_hot_pread(int fd, void *buf, size_t n, off_t off);
/* The whole file (at most 512 MiB), or NULL. */
uint8_t *rt_hot_slurp(int dirfd, const char *name, size_t *len);

void rt_hot_put_entry(struct rt_buf *b, uint8_t kind, const uint8_t *payload, size_t len);
/* An entry at p (n bytes left): its payload length, 0 when it is not a
 * whole, valid entry, SIZE_MAX an empty one. */
size_t rt_hot_entry_at(const uint8_t *p, size_t n);
/* Index the bytes of the hot file named first: whole entries in order,
 * skipping damaged ones. Entries carry their own checksums and indexes: a
 * damaged header (its magic, or another first than the name's) costs none
 * of them. false when the file is shorter than a header. */
bool rt_hot_scan(const uint8_t *buf, size_t len, uint64_t first, struct rt_hot_scan *h);
void rt_hot_scan_free(struct rt_hot_scan *h);
bool rt_hot_record_head(const uint8_t *payload, size_t len, uint64_t *index, uint32_t *tid);
/* The template in a template entry's payload (after its number). */
bool rt_hot_tmpl_bytes(const uint8_t *payload, size_t len, const uint8_t **t, size_t *tlen);
/* Numbers of a record payload (after its head) into v. */
bool rt_hot_record_values(const uint8_t *payload, size_t len, int64_t **v, size_t *vcap, size_t *n);

#endif
