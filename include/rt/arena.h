/* A bump allocator: everything a sample points to lives in its arena, so a
 * sample is reset in O(1) each tick without freeing strings one by one. */
#ifndef RT_ARENA_H
#define RT_ARENA_H

#include <stddef.h>

struct rt_arena_chunk;

struct rt_arena {
    struct rt_arena_chunk *head;   /* chunk being filled */
    struct rt_arena_chunk *first;  /* kept across resets */
};

void rt_arena_init(struct rt_arena *a);
/* Forget all allocations but keep the memory for reuse. */
void rt_arena_reset(struct rt_arena *a);
void rt_arena_free(struct rt_arena *a);
/* Zeroed, 16-byte aligned; aborts on out-of-memory like the rest of the code. */
void *rt_arena_alloc(struct rt_arena *a, size_t size);
char *rt_arena_strdup(struct rt_arena *a, const char *s);
char *rt_arena_strndup(struct rt_arena *a, const char *s, size_t n);

#endif
