/* One sample of a job: scan its tree, build its line from the host sample of
 * the tick, write it, add it to the totals, publish it. */
#include "sampler/internal.h"

#include "rt/json.h"
#include "rt/sample_csv.h"
#include "rt/sample_json.h"
#include "rt/util.h"
#include "system/log.h"
#include "upload/upload.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Write what the disk takes of data, stopping at the first error (logged
 * once until writing works again). */
static size_t write_some(struct rt_job *j, const char *data, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(j->samples_fd, data + off, len - off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (!j->write_warned)
                rt_err("job %" PRIu64 ": cannot write samples: %s; keeping them in memory until it works",
                       j->id, strerror(errno));
            j->write_warned = true;
            break;
        }
        off += (size_t)n;
    }
    return off;
}

/* Append a sample line to the job's samples file. What the disk refuses
 * waits in memory and goes first next time, so the file stays in order. A
 * sample that would grow that backlog past backlog_max is not kept at all:
 * false, and the caller does not index it, so the index matches the file. */
bool rt_sampler_store_append(struct rt_sampler *s, struct rt_job *j, const char *data, size_t len)
{
    if (j->samples_fd < 0)
        return true;
    if (j->unwritten_len) {
        size_t n = write_some(j, j->unwritten, j->unwritten_len);
        memmove(j->unwritten, j->unwritten + n, j->unwritten_len - n);
        j->unwritten_len -= n;
        if (!j->unwritten_len && j->write_warned) {
            rt_notice("job %" PRIu64 ": samples are written again", j->id);
            j->write_warned = j->backlog_warned = false;
        }
    }
    size_t off = j->unwritten_len ? 0 : write_some(j, data, len);
    size_t rest = len - off;
    if (!rest)
        return true;
    /* Part of this line is in the file already: the rest must follow it. */
    if (off == 0 && j->unwritten_len + rest > s->backlog_max) {
        rt_log_once(&j->backlog_warned, LOG_ERR,
                    "job %" PRIu64 ": %zu KiB of samples wait for the disk; new samples are not kept "
                    "until it has room", j->id, j->unwritten_len >> 10);
        return false;
    }
    j->unwritten = rt_xrealloc(j->unwritten, j->unwritten_len + rest);
    memcpy(j->unwritten + j->unwritten_len, data + off, rest);
    j->unwritten_len += rest;
    return true;
}

void rt_sampler_save_record(struct rt_sampler *s, struct rt_job *j, bool sync)
{
    rt_jobs_lock(s->jobs);
    struct json_object *rec = rt_job_to_record(j);
    rt_jobs_unlock(s->jobs);
    int r = rt_store_save_record(s->store, j->id, rec, sync);
    if (r < 0)
        rt_err("job %" PRIu64 ": cannot save its record: %s", j->id, strerror(-r));
    json_object_put(rec);
}

/* ---- job samples ---- */

/* A subtree serialised once per tick (see freeze). */
struct frozen {
    size_t len;
    char text[];
};

static int emit_frozen(struct json_object *o, struct printbuf *pb, int level, int flags)
{
    (void)level;
    (void)flags;
    const struct frozen *f = json_object_get_userdata(o);
    return printbuf_memappend(pb, f->text, (int)f->len);
}

static void free_frozen(struct json_object *o, void *userdata)
{
    (void)o;
    free(userdata);
}

static void freeze(struct json_object *o)
{
    if (!o)
        return;
    size_t len;
    const char *txt = json_object_to_json_string_length(o, JSON_FLAGS, &len);
    struct frozen *f = rt_xmalloc(sizeof(*f) + len + 1);
    f->len = len;
    memcpy(f->text, txt, len + 1);
    json_object_set_serializer(o, emit_frozen, f, free_frozen);
}

/* Every job line repeats the host sample: from the second job line of a
 * tick on, its host-only subtrees (per-core figures, disks, GPUs, memory,
 * NICs) are serialised once, so a job line costs its own fields, not the
 * size of the host. */
static void freeze_host(struct rt_sampler *s)
{
    if (++s->host_lines != 2)
        return;
    static const char *const host_arrays[] = {"disk", "gpu", "network"};
    for (size_t i = 0; i < RT_ARRAY_SIZE(host_arrays); i++)
        freeze(rt_json_get_array(s->host_obj, host_arrays[i]));
    freeze(rt_json_get_object(s->host_obj, "memory"));
    struct json_object *cpu = rt_json_get_object(s->host_obj, "cpu");
    if (cpu)
        freeze(rt_json_get_array(cpu, "per_core_pct"));
}

void rt_sampler_begin_scan(struct rt_sampler *s, bool fresh)
{
    if (fresh || s->cache_tick != s->tick_no) {
        rt_proc_cache_begin_tick(&s->cache);
        s->cache_tick = fresh ? UINT64_MAX : s->tick_no;
    }
}

/* One sample of a job: scan its tree, write and publish the line. Returns
 * the scan result for the caller (final samples look at the root), and
 * whether the sample was kept (see store_append); its usage counts anyway. */
bool rt_sampler_job_sample(struct rt_sampler *s, struct rt_job *j, bool fresh, struct rt_ptree_result *r)
{
    rt_sampler_begin_scan(s, fresh);
    rt_ptree_scan(&j->tree, &s->cache, r);
    uint64_t now = rt_mono_ns();
    double elapsed = (double)(now - j->last_sample_mono_ns) / 1e9;
    if (elapsed <= 0)
        elapsed = 1e-3;
    j->last_sample_mono_ns = now;
    double tck = (double)rt_clk_tck();

    struct rt_sample *sm = &s->sample;
    struct rt_process *p = &sm->proc;
    *p = (struct rt_process){
        .present = true,
        .pid = j->pid,
        .child_count = r->nprocs ? r->nprocs - 1 : 0,
        .utime_secs = (double)r->d_utime / tck,
        .stime_secs = (double)r->d_stime / tck,
        .pss_mib = r->pss_bytes / RT_MIB,
        .rss_mib = r->rss_bytes / RT_MIB,
        .disk_read_bytes = r->d_read_bytes,
        .disk_write_bytes = r->d_write_bytes,
    };
    /* CPU times move in clock ticks: over a few ms, one tick would read as
     * several cores. No tree uses more cores than the host has. */
    p->cores_used = (p->utime_secs + p->stime_secs) / fmax(elapsed, RT_CORES_MIN_SPAN_SECS);
    double ncpu = sm->cpu.n_cores ? (double)sm->cpu.n_cores : (double)sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu >= 1 && p->cores_used > ncpu)
        p->cores_used = ncpu;
    sm->job_id = j->id;
    sm->job_name = j->name;
    /* No two samples of a job share a timestamp: a final sample right after
     * a tick's (or a wall clock stepped back) moves to the next ms. */
    sm->timestamp_ms = fresh ? rt_real_ns() / 1000000 : s->host_timestamp_ms;
    if (sm->timestamp_ms <= j->last_timestamp_ms)
        sm->timestamp_ms = j->last_timestamp_ms + 1;
    j->last_timestamp_ms = sm->timestamp_ms;
    sm->timestamp_secs = sm->timestamp_ms / 1000;
    sm->has_interval = true;
    sm->actual_interval_ms = (uint64_t)llround(elapsed * 1000.0);
    struct rt_process_gpu host_gpu = sm->proc_gpu;
    if (!j->gpu_state)
        j->gpu_state = rt_gpu_job_new();
    rt_gpu_job_usage(s->gpu, j->gpu_state, j->tree.pids, j->tree.npids, elapsed, &sm->proc_gpu);
    struct rt_gpu_job_summary gs;
    rt_gpu_job_summary(j->gpu_state, &gs);

    freeze_host(s);
    rt_sample_json_set_job(s->host_obj, sm);
    json_object_object_add(s->host_obj, "timestamp_ms", rt_json_u64(sm->timestamp_ms));
    json_object_object_add(s->host_obj, "timestamp_secs", rt_json_u64(sm->timestamp_secs));
    json_object_object_add(s->host_obj, "actual_interval_ms", rt_json_u64(sm->actual_interval_ms));
    size_t len;
    const char *txt = json_object_to_json_string_length(s->host_obj, JSON_FLAGS, &len);
    struct rt_rcstr *line = rt_rcstr_new(txt, len);
    char row[1024];
    size_t rlen = rt_sample_to_csv(sm, row, sizeof(row));
    struct rt_rcstr *csv = rt_rcstr_new(row, rlen < sizeof(row) ? rlen : sizeof(row) - 1);

    /* The file gets "line\n", from a buffer kept across ticks. */
    if (len + 1 > s->line_cap) {
        s->line_cap = len + 1 + 1024;
        s->line = rt_xrealloc(s->line, s->line_cap);
    }
    memcpy(s->line, txt, len);
    s->line[len] = '\n';
    bool kept = rt_sampler_store_append(s, j, s->line, len + 1);

    rt_jobs_lock(s->jobs);
    struct rt_job_summary *sum = &j->summary;
    uint64_t index = sum->samples;
    if (kept) {
        sum->samples++;
        rt_job_note_sample(j, index, j->samples_bytes);
        j->samples_bytes += len + 1;
        /* The line's values, so that a restart rebuilds the same sums. */
        sum->pss_sum_bytes += (double)(p->pss_mib * RT_MIB);
        if (sm->proc_gpu.present) {
            double usage = rt_round_dec(sm->proc_gpu.usage, RT_DEC_CORES);
            if (usage > sum->gpu_peak_usage)
                sum->gpu_peak_usage = usage;
            sum->gpu_vram_sum_bytes += rt_round_dec(sm->proc_gpu.vram_mib, RT_DEC_MIB) * (double)RT_MIB;
        }
    }
    sum->cpu_secs += p->utime_secs + p->stime_secs;
    rt_job_summary_note_cores(sum, p->cores_used);
    if (p->child_count > sum->peak_children)
        sum->peak_children = p->child_count;
    if (r->rss_bytes > sum->peak_rss_bytes)
        sum->peak_rss_bytes = r->rss_bytes;
    if (r->pss_bytes > sum->peak_pss_bytes)
        sum->peak_pss_bytes = r->pss_bytes;
    sum->disk_read_bytes += r->d_read_bytes;
    sum->disk_write_bytes += r->d_write_bytes;
    j->current = (struct rt_job_current){
        .present = true,
        .sampled_at = (double)rt_real_ns() / 1e9,
        .cores = p->cores_used,
        .processes = (uint32_t)r->nprocs,
        .rss_bytes = r->rss_bytes,
        .pss_bytes = r->pss_bytes,
        .disk_read_bytes_per_sec = (double)r->d_read_bytes / elapsed,
        .disk_write_bytes_per_sec = (double)r->d_write_bytes / elapsed,
        .has_gpu = sm->proc_gpu.present,
        .gpu_usage = sm->proc_gpu.usage,
        .gpu_vram_bytes = (uint64_t)llround(sm->proc_gpu.vram_mib * (double)RT_MIB),
        .gpus_used = sm->proc_gpu.utilized,
    };
    if (gs.present) {
        sum->has_gpu = true;
        sum->gpu_avg_usage = gs.avg_usage;
        sum->gpu_peak_vram_bytes = gs.peak_vram_bytes;
        sum->has_gpu_energy = gs.has_energy;
        sum->gpu_energy_joules = gs.energy_joules;
        if (!sum->gpus || json_object_array_length(sum->gpus) != gs.n_gpus) {
            json_object_put(sum->gpus);
            sum->gpus = json_object_new_array_ext((int)gs.n_gpus);
            for (size_t i = 0; i < gs.n_gpus; i++)
                json_object_array_add(sum->gpus, json_object_new_string(gs.gpu_uuids[i]));
        }
    }
    rt_jobs_unlock(s->jobs);

    if (j->wants_upload && s->o.upload)
        rt_upload_job_rows(s->o.upload, j->id, csv->data, csv->len);

    if (kept) {
        struct rt_sevt *e = rt_sevt_new(RT_SEVT_JOB_SAMPLE);
        e->job_id = j->id;
        e->index = index;
        e->json = line;
        e->csv = csv;
        rt_sampler_publish(s, e, !fresh); /* a final sample at once; a tick's in one wake-up */
    } else {
        rt_rcstr_unref(line);
        rt_rcstr_unref(csv);
    }

    /* Restore the host view for the next job of this tick. */
    sm->proc_gpu = host_gpu;
    sm->timestamp_ms = s->host_timestamp_ms;
    sm->timestamp_secs = s->host_timestamp_ms / 1000;
    sm->has_interval = s->host_has_interval;
    sm->actual_interval_ms = s->host_interval_ms;
    return kept;
}
