/* Files of a directory tree from a fuzzer's input, for the harnesses whose
 * code reads a tree (a state directory, fixture /proc and /sys roots).
 *
 * An input is a sequence of records: a byte N, N bytes of a relative path,
 * two bytes of length L (little-endian), L bytes of content. Paths hold
 * [A-Za-z0-9._-/] only, no empty or ".." component, and at most 8 levels:
 * others are skipped, so nothing is written outside the tree.
 *
 * With specials, content that begins with a NUL byte makes no file: NUL 'F'
 * a FIFO, NUL 'L' K a symbolic link to the K-th (mod 4) of a file outside
 * the tree (rt_fuzz_outside), that file's directory, a path that does not
 * exist, and the link's own directory. */
#ifndef RT_FUZZ_TREE_H
#define RT_FUZZ_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Write the records under dir (created as needed, files replaced). Returns
 * the number of files written. */
size_t rt_fuzz_tree_apply(const char *dir, const uint8_t *data, size_t size, bool specials);
/* The file outside every tree that links may point to, holding text no
 * tree should ever show (RT_FUZZ_OUTSIDE_MARK), in rt_fuzz_workdir's
 * directory (trees go in subdirectories of it): its path. */
#define RT_FUZZ_OUTSIDE_MARK "LEAKED-FROM-OUTSIDE"
const char *rt_fuzz_outside(void);
/* Copy the tree src to dst (which must not exist). 0 or -1. */
int rt_fuzz_tree_copy(const char *src, const char *dst);
/* Remove dir and everything under it. */
void rt_fuzz_tree_remove(const char *dir);
/* A fresh directory under $TMPDIR (else /dev/shm, else /tmp), named after
 * prefix and removed at exit: its path (aborts when it cannot be made). */
const char *rt_fuzz_workdir(const char *prefix);

#endif
