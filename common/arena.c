#include "rt/arena.h"
#include "rt/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RT_ARENA_CHUNK 16384

struct rt_arena_chunk {
    struct rt_arena_chunk *next;
    size_t size;
    size_t used;
    _Alignas(16) unsigned char data[];
};

static struct rt_arena_chunk *chunk_new(size_t min)
{
    size_t size = min > RT_ARENA_CHUNK ? min : RT_ARENA_CHUNK;
    struct rt_arena_chunk *c = rt_xmalloc(sizeof(*c) + size);
    c->next = NULL;
    c->size = size;
    c->used = 0;
    return c;
}

void rt_arena_init(struct rt_arena *a)
{
    a->head = a->first = NULL;
}

void rt_arena_reset(struct rt_arena *a)
{
    for (struct rt_arena_chunk *c = a->first; c; c = c->next)
        c->used = 0;
    a->head = a->first;
}

void rt_arena_free(struct rt_arena *a)
{
    struct rt_arena_chunk *c = a->first;
    while (c) {
        struct rt_arena_chunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = a->first = NULL;
}

void *rt_arena_alloc(struct rt_arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (size == 0)
        size = 16;
    struct rt_arena_chunk *c = a->head;
    while (c && c->size - c->used < size) {
        /* After a reset, later chunks are empty and reusable. */
        c = c->next;
    }
    if (!c) {
        c = chunk_new(size);
        if (!a->first) {
            a->first = c;
        } else {
            struct rt_arena_chunk *last = a->first;
            while (last->next)
                last = last->next;
            last->next = c;
        }
    }
    a->head = c;
    void *p = c->data + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

char *rt_arena_strndup(struct rt_arena *a, const char *s, size_t n)
{
    if (!s)
        return NULL;
    size_t len = strnlen(s, n);
    char *d = rt_arena_alloc(a, len + 1);
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *rt_arena_strdup(struct rt_arena *a, const char *s)
{
    return s ? rt_arena_strndup(a, s, SIZE_MAX) : NULL;
}
