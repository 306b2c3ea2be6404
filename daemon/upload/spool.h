/* The on-disk spool: per job a directory (0700) with
 *   meta.json          run state: token, run id, credentials, sent seqs (0600)
 *   meta-copy.json     the same, written after it: what a damaged meta.json falls back to
 *   rows.<seq:06>      rows appended since the last cut, no header (0600)
 *   <seq:06>.csv.gz    a sealed batch: header + rows, gzip, waiting for its PUT
 * Every whole file is written to a .tmp name, fsynced and renamed, and the
 * directory fsynced, so a crash leaves either the old or the new file. */
#ifndef RT_UPLOAD_SPOOL_H
#define RT_UPLOAD_SPOOL_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_SPOOL_META "meta.json"
#define RT_SPOOL_META_COPY "meta-copy.json"
/* <spool>/quarantine/: damaged files set aside, never read or deleted by the
 * daemon (not a job id, so the loader passes over it). */
#define RT_SPOOL_QUARANTINE "quarantine"

/* mkdir 0700 (tightening the mode of an existing directory); an O_DIRECTORY
 * fd, or -errno. */
int rt_spool_open_dir(int dirfd, const char *name);
/* Whole file into a malloc'ed NUL-terminated buffer. 0 or -errno. */
int rt_spool_read_file(int dirfd, const char *name, char **data, size_t *len);

void rt_spool_rows_name(uint64_t seq, char out[32]);
void rt_spool_batch_name(uint64_t seq, char out[32]);
/* The append fd of rows.<seq> (O_APPEND, 0600), or -errno. */
int rt_spool_open_rows(int dirfd, uint64_t seq);

/* rows.<seq> -> <seq>.csv.gz with header; a trailing partial line is dropped.
 * 1 sealed (*rows, *bytes = gz size), 0 no complete row (file removed),
 * -errno on failure (rows file kept). */
int rt_spool_seal(int dirfd, uint64_t seq, uint64_t *rows, uint64_t *bytes);

/* gzip (level 6, standard header) / gunzip in memory. 0 or -1. */
int rt_gzip(const void *in, size_t len, char **out, size_t *outlen);
int rt_gunzip(const void *in, size_t len, char **out, size_t *outlen);

/* A batch as rt_spool_seal writes it: one whole gzip member (its CRC and
 * length match, nothing after it) of RT_CSV_HEADER and at least one row, each
 * of RT_CSV_COLUMNS fields and LF-terminated. 0, or -EBADMSG. With csv, the
 * plain text is returned (caller frees). */
int rt_spool_check_batch(const char *gz, size_t len, char **csv, size_t *csvlen);

/* Moves dirfd/name (a file or a directory) into <spool>/quarantine/ as `as`
 * (as.1, as.2, … when taken) and fsyncs both directories. 0 or -errno. */
int rt_spool_quarantine(int spool_fd, int dirfd, const char *name, const char *as);

/* A fresh DIR stream over dirfd, from the start (a dup shares the offset,
 * so it is rewound). NULL on error. */
DIR *rt_opendir_at(int dirfd);

/* Unlinks a file and fsyncs the directory; 0 or -errno (ENOENT is 0). */
int rt_spool_unlink(int dirfd, const char *name);

#endif
