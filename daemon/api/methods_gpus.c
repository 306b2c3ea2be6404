/* GPU methods: who holds each GPU (GetGpus), the usage ledger (GetUsage). */
#include "api/call.h"
#include "api/methods.h"
#include "daemon.h"
#include "gpuuse/gpuuse.h"
#include "proc/hidepid.h"
#include "rt/json.h"
#include "rt/util.h"

/* Who asks, and whether /proc would show them every process. */
static struct rt_gpuuse_viewer viewer_of(const struct rt_call *c)
{
    const struct rt_peer *peer = rt_call_peer(c);
    struct rt_gpuuse_viewer v = {.uid = peer->uid, .gid = peer->gid, .admin = peer->admin};
    struct rt_hidepid h;
    if (peer->admin)
        v.sees_all_pids = true; /* root, and the admin group who see every job and its pids anyway */
    else if (rt_hidepid_read(rt_call_daemon(c)->roots.proc_fd, &h) == 0)
        v.sees_all_pids = h.level == 0 || (h.has_gid && rt_peer_in_group(c->conn->fd, peer->gid, h.gid));
    return v;
}

static void m_get_gpus(struct rt_call *c)
{
    struct rt_daemon *d = rt_call_daemon(c);
    struct rt_gpuuse_viewer v = viewer_of(c);
    struct rt_gpuuse_snap *s = d->sampler ? rt_gpuuse_snapshot(rt_sampler_gpuuse(d->sampler)) : NULL;
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "gpus", rt_gpuuse_json(s, &v));
    json_object_object_add(p, "taken_at", s ? rt_json_double(s->taken_at, 3) : NULL);
    json_object_object_add(p, "idle_after_secs", json_object_new_int64(d->cfg.gpu_idle_after_secs));
    json_object_object_add(p, "idle_util_max_pct", json_object_new_int64(d->cfg.gpu_idle_util_max));
    json_object_object_add(p, "idle_vram_min_bytes", rt_json_u64(d->cfg.gpu_idle_vram_min_bytes));
    json_object_object_add(p, "all_processes_shown", json_object_new_boolean(v.sees_all_pids));
    rt_gpuuse_snap_unref(s);
    rt_call_reply(c, p);
}

static const struct rt_method methods[] = {
    {.name = "GetGpus", .fn = m_get_gpus},
};

const struct rt_method_table rt_gpu_methods = {RT_VL_INTERFACE, methods, RT_ARRAY_SIZE(methods)};
