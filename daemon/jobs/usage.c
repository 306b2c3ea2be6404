#include "jobs/usage.h"

#include "rt/util.h"

#include <stdlib.h>
#include <string.h>

static struct rt_usage_block *find_block(const struct rt_usage *u, uint64_t first)
{
    size_t lo = 0, hi = u->nblocks;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (u->blocks[mid].first < first)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < u->nblocks && u->blocks[lo].first == first ? &u->blocks[lo] : NULL;
}

void rt_usage_build(struct rt_usage *u, struct rt_state_dir *s, struct rt_job **jobs, size_t n)
{
    memset(u, 0, sizeof(*u));
    u->njobs = n;
    u->jobs = jobs;
    u->own = rt_xcalloc(n ? n : 1, sizeof(*u->own));
    u->gone = rt_xcalloc(n ? n : 1, sizeof(*u->gone));
    size_t nsealed;
    struct rt_seg_block hot, *b = rt_seglog_blocks(&s->samples.host, &nsealed, &hot);
    u->blocks = rt_xcalloc(nsealed + 1, sizeof(*u->blocks));
    for (size_t i = 0; i < nsealed; i++)
        u->blocks[u->nblocks++] = (struct rt_usage_block){b[i].first, b[i].bytes, 0};
    if (hot.bytes)
        u->blocks[u->nblocks++] = (struct rt_usage_block){hot.first, hot.bytes, 0};
    free(b);
    for (size_t i = 0; i < u->nblocks; i++)
        u->total += u->blocks[i].bytes;
    for (size_t i = 0; i < n; i++) {
        const struct rt_figlog *fl = jobs[i]->fig;
        u->own[i] = rt_state_dir_job_bytes(jobs[i]);
        u->total += u->own[i];
        for (size_t k = 0; fl && k < fl->nhblocks; k++) {
            struct rt_usage_block *blk = find_block(u, fl->hblocks[k]);
            if (blk)
                blk->refs++;
        }
    }
}

double rt_usage_of(const struct rt_usage *u, size_t i)
{
    const struct rt_figlog *fl = u->jobs[i]->fig;
    double bytes = (double)u->own[i];
    for (size_t k = 0; fl && k < fl->nhblocks; k++) {
        const struct rt_usage_block *blk = find_block(u, fl->hblocks[k]);
        if (blk && blk->refs)
            bytes += (double)blk->bytes / blk->refs;
    }
    return bytes;
}

void rt_usage_remove(struct rt_usage *u, size_t i)
{
    if (u->gone[i])
        return;
    u->gone[i] = true;
    u->total -= u->own[i];
    const struct rt_figlog *fl = u->jobs[i]->fig;
    for (size_t k = 0; fl && k < fl->nhblocks; k++) {
        struct rt_usage_block *blk = find_block(u, fl->hblocks[k]);
        if (blk && blk->refs && --blk->refs == 0)
            u->total -= blk->bytes;
    }
}

void rt_usage_free(struct rt_usage *u)
{
    free(u->own);
    free(u->gone);
    free(u->blocks);
    memset(u, 0, sizeof(*u));
}
