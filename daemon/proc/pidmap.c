#include "proc/pidmap.h"

#include "rt/util.h"

#include <stdlib.h>
#include <string.h>

void rt_pidmap_init(struct rt_pidmap *m)
{
    memset(m, 0, sizeof(*m));
}

void rt_pidmap_free(struct rt_pidmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}

void rt_pidmap_clear(struct rt_pidmap *m)
{
    if (m->keys)
        memset(m->keys, 0, m->cap * sizeof(*m->keys));
    m->n = 0;
}

static size_t slot(int32_t pid, size_t cap)
{
    uint32_t h = (uint32_t)pid * 2654435761u; /* Knuth's multiplicative hash */
    return h & (cap - 1);
}

bool rt_pidmap_get(const struct rt_pidmap *m, int32_t pid, uint32_t *val)
{
    if (!m->cap)
        return false;
    for (size_t i = slot(pid, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == pid) {
            *val = m->vals[i];
            return true;
        }
        if (m->keys[i] == 0)
            return false;
    }
}

static void grow(struct rt_pidmap *m)
{
    size_t old_cap = m->cap;
    int32_t *old_keys = m->keys;
    uint32_t *old_vals = m->vals;
    m->cap = old_cap ? old_cap * 2 : 64;
    m->keys = rt_xcalloc(m->cap, sizeof(*m->keys));
    m->vals = rt_xcalloc(m->cap, sizeof(*m->vals));
    m->n = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old_keys[i])
            rt_pidmap_put(m, old_keys[i], old_vals[i]);
    free(old_keys);
    free(old_vals);
}

void rt_pidmap_put(struct rt_pidmap *m, int32_t pid, uint32_t val)
{
    if ((m->n + 1) * 2 > m->cap)
        grow(m);
    for (size_t i = slot(pid, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == pid) {
            m->vals[i] = val;
            return;
        }
        if (m->keys[i] == 0) {
            m->keys[i] = pid;
            m->vals[i] = val;
            m->n++;
            return;
        }
    }
}
