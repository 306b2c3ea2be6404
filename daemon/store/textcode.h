/* A JSON text as a template and its numbers. Consecutive host samples
 * differ in their numbers only: the template (keys, strings, structure) is
 * kept once per block and the numbers become integer columns that compress
 * well. Exact: join(split(text)) == text, byte for byte. */
#ifndef RT_STORE_TEXTCODE_H
#define RT_STORE_TEXTCODE_H

#include "store/buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Template markers (bytes JSON text never holds raw). */
#define RT_TC_INT 0x01 /* an integer: the value */
#define RT_TC_DEC 0x02 /* a decimal in shortest form, <= 6 places: the value x 10^6 */
#define RT_TC_DEC_SCALE 1000000

struct rt_i64s {
    int64_t *v;
    size_t n, cap;
};
void rt_i64s_push(struct rt_i64s *a, int64_t v);
void rt_i64s_free(struct rt_i64s *a);

/* Numbers in any other form stay in the template as text. false (nothing
 * usable) when the text holds a marker byte. */
bool rt_textcode_split(const char *text, size_t len, struct rt_buf *tmpl, struct rt_i64s *nums);
/* Appends the text to out; false when template and numbers do not fit each
 * other (the count). */
bool rt_textcode_join(const uint8_t *tmpl, size_t tlen, const int64_t *nums, size_t n, struct rt_buf *out);
/* How many numbers a template takes. */
size_t rt_textcode_count(const uint8_t *tmpl, size_t tlen);

#endif
