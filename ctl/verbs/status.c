/* status: the host's live figures, or a job's summary, metadata and last sample. */
#include "verbs/verbs.h"

#include <string.h>

#include "live/follow.h"

#include "rt/text.h"
#include "rt/util.h"

#include <stdint.h>
#include <string.h>

enum { FOLLOW = 'F' };

static const char usage[] =
    "Usage: resource-trackerctl status [--json] [--user USER] [JOB]\n"
    "       resource-trackerctl status --follow [--format json|csv|text]\n"
    "Live host figures, or JOB's summary, metadata, tags and latest sample (JOB: an\n"
    "id, or a name among your jobs: the running one, else the newest); with\n"
    "--follow, every host sample as it is taken until interrupted, like the Rust\n"
    "tracker without arguments.\n\n"
    "  -f, --format FORMAT     text or json; --json is --format json; with --follow,\n"
    "                          json (JSON Lines, the default), csv (the 32 columns)\n"
    "                          or text (a line per sample, as vmstat prints them)\n"
    "  -F, --follow            the host's samples as they come\n"
    CTL_USER_USAGE
    "  -h, --help              this help\n";

static const struct ctl_opt opts[] = {
    {"follow", FOLLOW, NULL, NULL, CTL_KIND_NONE},
    {NULL, 0, NULL, NULL, CTL_KIND_NONE},
};

const struct ctl_spec ctl_status_spec = {
    .verb = "status",
    .usage = usage,
    .opts = opts,
    .formats = CTL_FMT_TEXT | CTL_FMT_JSON | CTL_FMT_CSV,
    .more = ctl_user_opts,
    .operand = CTL_KIND_JOB,
};

static void print_host(struct json_object *s)
{
    struct json_object *cpu = rt_json_get_object(s, "cpu");
    struct json_object *mem = rt_json_get_object(s, "memory");
    struct json_object *cores = rt_json_get_array(cpu, "per_core_pct");
    size_t ncores = cores ? json_object_array_length(cores) : 0;
    char ts[32], b1[32], b2[32], b3[32];
    ctl_fmt_time(ts, sizeof(ts), dbl(s, "timestamp_secs"));
    printf("Host sample at %s\n", ts);
    printf("CPU      %.2f of %zu cores busy, user %.2fs, system %.2fs, %lld processes\n",
           dbl(cpu, "utilization_pct"), ncores, dbl(cpu, "utime_secs"), dbl(cpu, "stime_secs"),
           (long long)i64(cpu, "process_count"));
    printf("Cores   ");
    for (size_t i = 0; i < ncores; i++)
        printf(" %5.1f%%", json_object_get_double(json_object_array_get_idx(cores, i)));
    printf("\n");
    ctl_fmt_bytes(b1, sizeof(b1), dbl(mem, "used_mib") * 1048576.0);
    ctl_fmt_bytes(b2, sizeof(b2), dbl(mem, "total_mib") * 1048576.0);
    ctl_fmt_bytes(b3, sizeof(b3), dbl(mem, "available_mib") * 1048576.0);
    printf("Memory   %s used of %s (%.1f%%), %s available", b1, b2, dbl(mem, "used_pct"), b3);
    if (dbl(mem, "swap_total_mib") > 0) {
        ctl_fmt_bytes(b1, sizeof(b1), dbl(mem, "swap_used_mib") * 1048576.0);
        printf(", swap %s used", b1);
    }
    printf("\n");
    struct json_object *disks = rt_json_get_array(s, "disk");
    for (size_t i = 0; disks && i < json_object_array_length(disks); i++) {
        struct json_object *d = json_object_array_get_idx(disks, i);
        ctl_fmt_bytes(b1, sizeof(b1), dbl(d, "read_bytes_per_sec"));
        ctl_fmt_bytes(b2, sizeof(b2), dbl(d, "write_bytes_per_sec"));
        printf("Disk     %-10s read %s/s, write %s/s", rt_json_get_string(d, "device"), b1, b2);
        struct json_object *mounts = rt_json_get_array(d, "mounts");
        for (size_t k = 0; mounts && k < json_object_array_length(mounts); k++) {
            struct json_object *m = json_object_array_get_idx(mounts, k);
            ctl_fmt_bytes(b3, sizeof(b3), dbl(m, "total_bytes"));
            printf("%s %s %d%% of %s", k ? "," : ";", rt_json_get_string(m, "mount_point"),
                   ctl_df_pct((uint64_t)i64(m, "used_bytes"), (uint64_t)i64(m, "available_bytes")), b3);
        }
        printf("\n");
    }
    struct json_object *nets = rt_json_get_array(s, "network");
    for (size_t i = 0; nets && i < json_object_array_length(nets); i++) {
        struct json_object *n = json_object_array_get_idx(nets, i);
        ctl_fmt_bytes(b1, sizeof(b1), dbl(n, "rx_bytes_per_sec"));
        ctl_fmt_bytes(b2, sizeof(b2), dbl(n, "tx_bytes_per_sec"));
        const char *state = rt_json_get_string(n, "operstate");
        printf("Network  %-10s receive %s/s, send %s/s (%s)\n", rt_json_get_string(n, "interface"), b1, b2,
               state ? state : "unknown");
    }
    struct json_object *gpus = rt_json_get_array(s, "gpu");
    for (size_t i = 0; gpus && i < json_object_array_length(gpus); i++) {
        struct json_object *g = json_object_array_get_idx(gpus, i);
        ctl_fmt_bytes(b1, sizeof(b1), dbl(g, "vram_used_bytes"));
        ctl_fmt_bytes(b2, sizeof(b2), dbl(g, "vram_total_bytes"));
        printf("GPU      %-10s %s: %.0f%% busy, VRAM %s of %s", rt_json_get_string(g, "host_id"),
               rt_json_get_string(g, "name"), dbl(g, "utilization_pct"), b1, b2);
        double v;
        if (rt_json_get_double(g, "temperature_celsius", &v))
            printf(", %.0f °C", v);
        if (rt_json_get_double(g, "power_watts", &v))
            printf(", %.0f W", v);
        printf("\n");
    }
    if (!gpus || json_object_array_length(gpus) == 0)
        printf("GPU      none\n");
}

/* Text from a job as it is, but control characters escaped for the terminal
 * (an administrator reads other users' jobs). */
static const char *clean(const char *s, char *buf, size_t size)
{
    ctl_fmt_cut(buf, size, s, SIZE_MAX);
    return buf;
}

static void print_metadata(struct json_object *md)
{
    static const char *const keys[] = {"project_name", "stage_name", "task_name",       "team",
                                       "env",          "language",   "orchestrator",    "executor",
                                       "external_run_id", "container_image"};
    char buf[4 * 4096 + 8]; /* a value is at most 4096 bytes, each at most 4 escaped */
    struct json_object *cmd = rt_json_get_array(md, "command");
    if (cmd) {
        printf("Command ");
        for (size_t i = 0; i < json_object_array_length(cmd); i++)
            printf(" %s", clean(json_object_get_string(json_object_array_get_idx(cmd, i)), buf, sizeof(buf)));
        printf("\n");
    }
    const char *label = "Metadata";
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *v = rt_json_get_string(md, keys[i]);
        if (v) {
            printf("%-8s %-16s %s\n", label, keys[i], clean(v, buf, sizeof(buf)));
            label = "";
        }
    }
    struct json_object *tags = rt_json_get_array(md, "tags");
    label = "Tags";
    for (size_t i = 0; tags && i < json_object_array_length(tags); i++) {
        printf("%-8s %s\n", label, clean(json_object_get_string(json_object_array_get_idx(tags, i)), buf, sizeof(buf)));
        label = "";
    }
}

/* The job's GPUs idle but held, or given and unused, now. */
static void print_gpu_idle(struct json_object *idle)
{
    for (size_t i = 0; idle && i < json_object_array_length(idle); i++) {
        struct json_object *e = json_object_array_get_idx(idle, i);
        const char *kind = rt_json_get_string(e, "kind");
        char when[32];
        ctl_fmt_time(when, sizeof(when), dbl(e, "since"));
        printf("GPU idle GPU %lld (%s) %s since %s\n", (long long)i64(e, "index"), rt_json_get_string(e, "uuid"),
               kind && strcmp(kind, "unused") == 0 ? "given to the job and unused" : "idle but held", when + 11);
    }
}

static void print_job(struct json_object *j, struct json_object *last)
{
    struct json_object *s = rt_json_get_object(j, "summary");
    struct json_object *md = rt_json_get_object(j, "metadata");
    const char *name = rt_json_get_string(j, "name");
    char user[64], started[32], dur[32], b1[32], b2[32];
    const char *state = rt_json_get_string(j, "state") ?: "";
    char end[64];
    bool ended = strcmp(state, "running") != 0 && strcmp(state, "stopped") != 0;
    printf("Job %lld%s%s%s: %s%s%s\n", (long long)i64(j, "id"), name ? " (" : "", name ? name : "", name ? ")" : "",
           state, ended ? ", " : "", ended ? ctl_fmt_end(end, sizeof(end), j, false) : "");
    ctl_fmt_time(started, sizeof(started), dbl(j, "started_at"));
    ctl_fmt_duration(dur, sizeof(dur), dbl(s, "duration_secs"));
    printf("Owner    %s", ctl_fmt_user(i64(j, "owner_uid"), user, sizeof(user)));
    if (i64(j, "pid"))
        printf(", root pid %lld", (long long)i64(j, "pid"));
    printf("\n");
    printf("Started  %s, ran %s, %lld samples every %.3gs\n", started, dur, (long long)i64(s, "samples"),
           dbl(j, "interval_secs"));
    print_metadata(md);
    struct json_object *cpu = rt_json_get_object(last, "cpu");
    printf("CPU      %.2f s in total, %.2f cores on average, peak %.2f", ctl_total0(s, "cpu_secs"),
           ctl_total0(s, "avg_cores"), ctl_total0(s, "peak_cores"));
    if (cpu)
        printf(", last %.2f", dbl(cpu, ctl_fig_json("cores_used")));
    printf("\n");
    ctl_print_job_memory(stdout, "Memory   ", j);
    double now;
    if (cpu && rt_json_get_double(cpu, ctl_fig_json("mem_bytes"), &now)) {
        ctl_fmt_bytes(b1, sizeof(b1), now);
        printf(", last %s", b1);
    }
    printf("\n");
    ctl_fmt_bytes(b1, sizeof(b1), ctl_total0(s, "disk_read_bytes"));
    ctl_fmt_bytes(b2, sizeof(b2), ctl_total0(s, "disk_write_bytes"));
    printf("Disk     read %s, written %s\n", b1, b2);
    double kids;
    if (ctl_total(s, "peak_children", &kids)) { /* a process tree's */
        printf("Children peak %.0f", kids);
        if (cpu)
            printf(", last %lld", (long long)i64(cpu, ctl_fig_json("child_count")));
        printf("\n");
    }
    double v;
    if (ctl_total(s, "gpu_avg_usage", &v)) {
        ctl_fmt_bytes(b1, sizeof(b1), ctl_total0(s, "gpu_peak_vram_bytes"));
        printf("GPU      %.2f GPUs on average, peak VRAM %s, energy ", v, b1);
        if (ctl_total(s, "gpu_energy_joules", &v)) /* null: no energy counter */
            printf("%.1f J\n", v);
        else
            printf("unknown\n");
        ctl_print_gpu_health(stdout, "", s);
        print_gpu_idle(rt_json_get_array(j, "gpu_idle"));
    }
    char tracked[512];
    ctl_job_tracking(j, tracked, sizeof(tracked));
    printf("Tracked  %s\n", tracked);
    ctl_print_job_kernel(stdout, "Note     ", j);
    ctl_print_request(stdout, j, "");
    struct json_object *up = rt_json_get_object(j, "upload");
    if (up) {
        /* The run id and the error are the server's words. */
        char err[1024], run[256];
        rt_escape_into(err, sizeof(err), rt_json_get_string(up, "last_error"));
        rt_escape_into(run, sizeof(run), rt_json_get_string(up, "run_id"));
        printf("Upload   %s, run %s, %lld batches sent, %lld pending%s%s\n", rt_json_get_string(up, "state"),
               *run ? run : "-", (long long)i64(up, "batches_sent"), (long long)i64(up, "batches_pending"),
               *err ? ", last error: " : "", err);
    }
}

int ctl_status(struct ctl *ctl, int argc, char **argv)
{
    const char *ref;
    bool follow = false;
    struct ctl_args a;
    ctl_args_init(&a, ctl, &ctl_status_spec);
    for (int o; (o = ctl_args_next(&a, argc, argv)) != CTL_ARGS_END;) {
        if (o == CTL_ARGS_STOP)
            return a.rc;
        follow |= o == FOLLOW;
        if (o == CTL_OPT_USER)
            ctl->user = optarg;
    }
    int rc = ctl_args_operands(&a, argc, argv, &ref, 0, 1);
    if (rc)
        return rc;
    if (follow && ref)
        return ctl_args_error(&a, "--follow follows the host; samples --follow JOB follows a job");
    if (follow) /* JSON Lines, as the Rust tracker, unless a format is asked for */
        return ctl_follow_host(ctl, ctl->format_chosen ? ctl->format : CTL_FMT_JSON);
    if (ctl->format == CTL_FMT_CSV)
        return ctl_args_error(&a, "--format csv goes with --follow");
    struct rt_vl_client c = {.fd = -1};
    struct json_object *reply = NULL, *rp;
    if (!ref) {
        rc = ctl_simple_call(ctl, M("GetHostSample"), NULL, &c, &reply, &rp);
        if (!rc) {
            if (ctl->json)
                ctl_print_json(stdout, rt_json_get_object(rp, "sample"));
            else
                print_host(rt_json_get_object(rp, "sample"));
        }
        json_object_put(reply);
        rt_vl_client_close(&c);
        return rc;
    }
    struct json_object *p = json_object_new_object();
    if ((rc = ctl_job_ref(ctl, p, ref))) {
        json_object_put(p);
        return rc;
    }
    rc = ctl_simple_call(ctl, M("GetJob"), p, &c, &reply, &rp);
    if (rc) {
        rt_vl_client_close(&c);
        return rc;
    }
    struct json_object *job = rt_json_get_object(rp, "job");
    /* The latest sample, for the "last" figures. */
    struct json_object *sp = json_object_new_object(), *sreply = NULL, *srp = NULL, *last = NULL;
    int64_t n = i64(rt_json_get_object(job, "summary"), "samples");
    json_object_object_add(sp, "id", json_object_new_int64(i64(job, "id")));
    json_object_object_add(sp, "offset", json_object_new_int64(n > 0 ? n - 1 : 0));
    json_object_object_add(sp, "limit", json_object_new_int64(1));
    if (ctl_call(&c, M("GetJobSamples"), sp, &sreply, &srp) == 0) {
        struct json_object *arr = rt_json_get_array(srp, "samples");
        if (arr && json_object_array_length(arr))
            last = json_object_array_get_idx(arr, 0);
    }
    if (ctl->json) {
        struct json_object *o = json_object_new_object();
        json_object_object_add(o, "job", json_object_get(job));
        json_object_object_add(o, "last_sample", last ? json_object_get(last) : NULL);
        ctl_print_json(stdout, o);
        json_object_put(o);
    } else {
        print_job(job, last);
    }
    json_object_put(sreply);
    json_object_put(reply);
    rt_vl_client_close(&c);
    return 0;
}
