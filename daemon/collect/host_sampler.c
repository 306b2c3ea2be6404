#include "collect/host_sampler.h"

#include "collect/disk.h"
#include "collect/memory.h"
#include "collect/net.h"
#include "rt/util.h"

#include <stdlib.h>

struct rt_host_sampler {
    const struct rt_roots *roots;
    struct rt_collect_hooks hooks;
    double nominal_interval_secs;
    bool have_prev;
    uint64_t prev_ns;
    struct rt_cpu_collector *cpu;
    struct rt_disk_collector *disk;
    struct rt_net_collector *net;
    struct rt_keptfile meminfo;
};

struct rt_host_sampler *rt_host_sampler_new_hooks(const struct rt_roots *r, double nominal_interval_secs,
                                                  const struct rt_collect_hooks *hooks)
{
    struct rt_host_sampler *h = rt_xcalloc(1, sizeof(*h));
    h->roots = r;
    rt_collect_hooks_resolve(&h->hooks, hooks);
    h->nominal_interval_secs = nominal_interval_secs;
    h->meminfo = (struct rt_keptfile)RT_KEPTFILE_WHOLE;
    h->cpu = rt_cpu_collector_new_hooks(r, &h->hooks);
    h->disk = rt_disk_collector_new_hooks(r, &h->hooks);
    h->net = rt_net_collector_new_hooks(r, &h->hooks);
    return h;
}

struct rt_host_sampler *rt_host_sampler_new(const struct rt_roots *r, double nominal_interval_secs)
{
    return rt_host_sampler_new_hooks(r, nominal_interval_secs, NULL);
}

void rt_host_sampler_collect(struct rt_host_sampler *h, struct rt_sample *s)
{
    s->timestamp_ms = h->hooks.real_ns(h->hooks.ctx) / 1000000;
    s->timestamp_secs = s->timestamp_ms / 1000;
    uint64_t now = h->hooks.mono_ns(h->hooks.ctx);
    s->has_interval = h->have_prev;
    s->actual_interval_ms = h->have_prev ? (now - h->prev_ns) / 1000000 : 0;
    h->have_prev = true;
    h->prev_ns = now;
    s->nominal_interval_secs = h->nominal_interval_secs;

    rt_cpu_collect(h->cpu, s);
    rt_memory_collect_kept(h->roots, &h->meminfo, &s->memory);
    rt_disk_collect(h->disk, s);
    rt_net_collect(h->net, s);
    s->gpus = NULL;
    s->n_gpus = 0;
}

struct rt_cpu_collector *rt_host_sampler_cpu(struct rt_host_sampler *h)
{
    return h->cpu;
}

void rt_host_sampler_free(struct rt_host_sampler *h)
{
    if (!h)
        return;
    rt_cpu_collector_free(h->cpu);
    rt_disk_collector_free(h->disk);
    rt_net_collector_free(h->net);
    rt_keptfile_close(&h->meminfo);
    free(h);
}
