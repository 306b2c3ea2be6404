#include "rt/sample_csv.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

const char RT_CSV_HEADER[] =
    "timestamp,system_processes,system_utime,system_stime,system_cpu_usage,"
    "system_memory_free_mib,system_memory_used_mib,system_memory_buffers_mib,"
    "system_memory_cached_mib,system_memory_active_mib,system_memory_inactive_mib,"
    "system_disk_read_bytes,system_disk_write_bytes,system_disk_space_total_gb,"
    "system_disk_space_used_gb,system_disk_space_free_gb,system_net_recv_bytes,"
    "system_net_sent_bytes,system_gpu_usage,system_gpu_vram_mib,system_gpu_utilized,"
    "process_pid,process_children,process_utime,process_stime,process_cpu_usage,"
    "process_memory_mib,process_disk_read_bytes,process_disk_write_bytes,"
    "process_gpu_usage,process_gpu_vram_mib,process_gpu_utilized";

struct out {
    char *buf;
    size_t size, len;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->size ? o->size - o->len : 0;
    int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

size_t rt_sample_to_csv(const struct rt_sample *s, char *buf, size_t size)
{
    struct out o = {buf, size, 0};
    const struct rt_memory *m = &s->memory;

    double space_total = 0, space_free = 0;
    for (size_t i = 0; i < s->n_disks; i++)
        for (size_t j = 0; j < s->disks[i].n_mounts; j++) {
            space_total += (double)s->disks[i].mounts[j].total_bytes / 1e9;
            space_free += (double)s->disks[i].mounts[j].available_bytes / 1e9;
        }
    double gpu_usage = 0, gpu_vram = 0;
    unsigned gpu_busy = 0;
    for (size_t i = 0; i < s->n_gpus; i++) {
        double util = rt_round_dec(s->gpus[i].utilization_pct, RT_DEC_PCT);
        gpu_usage += util / 100.0;
        gpu_vram += (double)s->gpus[i].vram_used_bytes / (double)RT_MIB;
        if (util > 0)
            gpu_busy++;
    }

    /* Values rounded as the JSON writer rounds them (see RT_DEC_*). */
    /* Seconds with milliseconds, as the Python tracker writes them (3 dp):
     * samples less than a second apart keep distinct timestamps. */
    put(&o, "%" PRIu64 ".%03u,%" PRIu32 ",%.3f,%.3f,%.4f,", s->timestamp_ms / 1000,
        (unsigned)(s->timestamp_ms % 1000), s->cpu.process_count,
        rt_round_dec(s->cpu.utime_secs, RT_DEC_SECS), rt_round_dec(s->cpu.stime_secs, RT_DEC_SECS),
        rt_round_dec(s->cpu.utilization_pct, RT_DEC_CORES));
    put(&o, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",", m->free_mib,
        m->used_mib, m->buffers_mib, m->cached_mib, m->active_mib, m->inactive_mib);
    put(&o, "%" PRIu64 ",%" PRIu64 ",%.6f,%.6f,%.6f,", rt_sample_disk_read_bytes(s),
        rt_sample_disk_write_bytes(s), space_total, space_total - space_free, space_free);
    put(&o, "%" PRIu64 ",%" PRIu64 ",%.4f,%.4f,%u,", rt_sample_net_recv_bytes(s),
        rt_sample_net_sent_bytes(s), gpu_usage, gpu_vram, gpu_busy);

    const struct rt_process *p = &s->proc;
    if (p->present)
        put(&o, "%" PRId32 ",%" PRIu32 ",%.4f,%.4f,%.4f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",", p->pid,
            p->child_count, rt_round_dec(p->utime_secs, RT_DEC_SECS), rt_round_dec(p->stime_secs, RT_DEC_SECS),
            rt_round_dec(p->cores_used, RT_DEC_CORES), p->pss_mib, p->disk_read_bytes, p->disk_write_bytes);
    else
        put(&o, ",,,,,,,,");
    /* On host samples these are the host's GPU use, as the Rust tracker
     * writes them without a PID; empty without a GPU backend. */
    if (s->proc_gpu.present)
        put(&o, "%.4f,%.4f,%" PRIu32 "\n", rt_round_dec(s->proc_gpu.usage, RT_DEC_CORES),
            rt_round_dec(s->proc_gpu.vram_mib, RT_DEC_MIB), s->proc_gpu.utilized);
    else
        put(&o, ",,\n");
    return o.len;
}
