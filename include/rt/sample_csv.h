/* CSV form of a sample: the 32 columns of the Python tracker's combined CSV,
 * unquoted, LF-terminated; process columns empty on host samples. */
#ifndef RT_SAMPLE_CSV_H
#define RT_SAMPLE_CSV_H

#include "rt/sample.h"

#include <stddef.h>

#define RT_CSV_COLUMNS 32
extern const char RT_CSV_HEADER[]; /* without the trailing newline */

/* Write one row with its '\n' into buf. Returns the length written, or the
 * length needed (like snprintf) when size is too small. */
size_t rt_sample_to_csv(const struct rt_sample *s, char *buf, size_t size);

#endif
