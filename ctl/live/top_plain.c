/* top when stdout is not a terminal: a block of plain lines per refresh (one
 * per sampling interval), for logs and scripts. */
#include "live/top.h"

#include "rt/json.h"

#include <stdlib.h>
#include <string.h>

#define PLAIN_WIDTH 200 /* every column; the command takes what is left */

static void print_host(const struct top *t)
{
    const struct rt_sample *s = &t->host;
    char when[32], a[32], b[32];
    ctl_fmt_time(when, sizeof(when), (double)s->timestamp_secs);
    printf("resource-trackerd %s on %s, %s: %s\n", t->version, t->hostname, when,
           t->mine_only ? "your jobs" : t->admin ? "the jobs of all users" : "your jobs");
    printf("CPU      %.2f of %zu busy;", s->cpu.utilization_pct, s->cpu.n_cores);
    for (size_t i = 0; i < s->cpu.n_cores; i++)
        printf(" %.0f%%", s->cpu.per_core_pct[i]);
    printf("\n");
    ctl_fmt_bytes(a, sizeof(a), (double)(s->memory.used_mib * RT_MIB));
    ctl_fmt_bytes(b, sizeof(b), (double)(s->memory.total_mib * RT_MIB));
    printf("Memory   %s used of %s", a, b);
    ctl_fmt_bytes(a, sizeof(a), (double)(s->memory.swap_used_mib * RT_MIB));
    ctl_fmt_bytes(b, sizeof(b), (double)(s->memory.swap_total_mib * RT_MIB));
    printf(", swap %s of %s\n", a, b);
    for (size_t i = 0; i < s->n_disks; i++) {
        ctl_fmt_bytes(a, sizeof(a), s->disks[i].read_bytes_per_sec);
        ctl_fmt_bytes(b, sizeof(b), s->disks[i].write_bytes_per_sec);
        printf("Disk     %s read %s/s, write %s/s\n", s->disks[i].device, a, b);
    }
    for (size_t i = 0; i < s->n_nets; i++) {
        ctl_fmt_bytes(a, sizeof(a), s->nets[i].rx_bytes_per_sec);
        ctl_fmt_bytes(b, sizeof(b), s->nets[i].tx_bytes_per_sec);
        printf("Network  %s receive %s/s, send %s/s\n", s->nets[i].interface, a, b);
    }
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct rt_gpu *g = &s->gpus[i];
        ctl_fmt_bytes(a, sizeof(a), (double)g->vram_used_bytes);
        ctl_fmt_bytes(b, sizeof(b), (double)g->vram_total_bytes);
        printf("GPU      %s %s: %.0f%% busy, VRAM %s of %s", g->host_id, g->name, g->utilization_pct, a, b);
        if (g->has_temperature)
            printf(", %u °C", g->temperature_celsius);
        if (g->has_power)
            printf(", %.0f W", g->power_watts);
        char holders[256];
        top_gpu_holders(t, g->uuid, holders, sizeof(holders));
        if (holders[0])
            printf("; %s", holders);
        printf("\n");
    }
}

static void print_jobs(const struct top *t)
{
    struct top_layout l;
    top_layout(t, PLAIN_WIDTH, &l);
    char line[4096];
    top_format_header(t, &l, false, line, sizeof(line));
    printf("%s\n", line);
    for (size_t i = 0; i < t->nvis; i++) {
        top_format_row(t->vis[i], &l, line, sizeof(line));
        printf("%s\n", line);
    }
}

int top_plain_run(struct top *t, struct rt_vl_client *host, struct rt_vl_client *jobs)
{
    bool due = false;
    for (long done = 0;;) {
        int which, sig;
        struct json_object *reply;
        int r = top_wait(host, jobs, false, &which, &reply, &sig);
        if (r == 0)
            return RT_EXIT_OK; /* asked to stop */
        if (r != 1)
            return r;
        struct json_object *p = rt_vl_reply_params(reply);
        if (which == 0) {
            r = top_set_host(t, rt_json_get_object(p, "sample"));
        } else {
            top_set_jobs(t, rt_json_get_array(p, "jobs"));
            top_refresh_gpus(t);
            due = true;
        }
        json_object_put(reply);
        if (r < 0)
            return RT_EXIT_FAILURE;
        if (!due || !t->have_host)
            continue;
        due = false;
        print_host(t);
        print_jobs(t);
        printf("\n");
        if (fflush(stdout) != 0)
            return RT_EXIT_FAILURE;
        if (t->iterations && ++done >= t->iterations)
            return RT_EXIT_OK;
    }
}
