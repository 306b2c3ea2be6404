/* An open-addressing hash map from PID (> 0) to a 32-bit value, used for the
 * per-tick process cache and the per-job process tables. */
#ifndef RT_PIDMAP_H
#define RT_PIDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_pidmap {
    int32_t *keys; /* 0 = empty slot */
    uint32_t *vals;
    size_t cap;    /* power of two */
    size_t n;
};

void rt_pidmap_init(struct rt_pidmap *m);
void rt_pidmap_free(struct rt_pidmap *m);
/* Remove every key but keep the memory. */
void rt_pidmap_clear(struct rt_pidmap *m);
bool rt_pidmap_get(const struct rt_pidmap *m, int32_t pid, uint32_t *val);
/* Insert or overwrite. */
void rt_pidmap_put(struct rt_pidmap *m, int32_t pid, uint32_t val);

#endif
