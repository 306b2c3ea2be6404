/* gpus: every GPU (MIG instances where MIG is on) with its figures, whether
 * it is idle but held, its health, and every process on it with its user
 * and job (GetGpus). */
#include "verbs/verbs.h"

#include "rt/util.h"

#include <string.h>

static const char usage[] =
    "Usage: resource-trackerctl gpus [--json]\n"
    "Every GPU (and MIG instance) with its use, memory, power, temperature, clock and\n"
    "health, whether it is idle but held (the daemon's gpu.idle_* settings), the jobs it\n"
    "was given to, and every process on it, tracked or not: pid, user, job, memory, use\n"
    "and since when. Another user's process you could not see in /proc (hidepid) is\n"
    "listed as hidden; another user's job is not named.\n\n"
    "  -f, --format FORMAT     text or json; --json is --format json\n"
    "  -h, --help              this help\n";

const struct ctl_spec ctl_gpus_spec = {
    .verb = "gpus",
    .usage = usage,
    .formats = CTL_FMT_TEXT | CTL_FMT_JSON,
};

static bool num(struct json_object *o, const char *k, double *v) { return rt_json_get_double(o, k, v); }

/* "14:02:11 (12m03s ago)" */
static void since_text(char *buf, size_t size, double since, double now)
{
    char when[32], ago[32];
    ctl_fmt_time(when, sizeof(when), since);
    ctl_fmt_duration(ago, sizeof(ago), now > since ? now - since : 0);
    snprintf(buf, size, "%s (%s ago)", when + 11, ago);
}

static void print_idle(struct json_object *o, const char *indent, double now)
{
    bool idle = false, stalled = false;
    double since;
    char b[32], when[64];
    if (rt_json_get_bool(o, "idle", &idle) && idle && num(o, "idle_since", &since)) {
        ctl_fmt_bytes(b, sizeof(b), dbl(o, "vram_held_bytes"));
        since_text(when, sizeof(when), since, now);
        printf("%sidle but held since %s, %s held\n", indent, when, b);
    }
    if (rt_json_get_bool(o, "busy_but_stalled", &stalled) && stalled)
        printf("%sbusy but stalled: busy, yet its SMs are nearly inactive (GPM)\n", indent);
    struct json_object *given = rt_json_get_array(o, "given_to");
    for (size_t i = 0; given && i < json_object_array_length(given); i++) {
        struct json_object *g = json_object_array_get_idx(given, i);
        printf("%sgiven to job %lld", indent, (long long)i64(g, "job_id"));
        if (num(g, "unused_since", &since)) {
            since_text(when, sizeof(when), since, now);
            printf(", unused by it since %s", when);
        }
        printf("\n");
    }
}

static void print_gpm(struct json_object *m, const char *indent)
{
    if (!m)
        return;
    printf("%sGPM: SM active %.1f%%, occupancy %.1f%%, tensor %.1f%%, DRAM bandwidth %.1f%%\n", indent,
           dbl(m, "sm_active_pct"), dbl(m, "sm_occupancy_pct"), dbl(m, "tensor_active_pct"), dbl(m, "dram_bw_pct"));
}

/* One line of what is wrong or held down; nothing when all is well. */
static void print_health(struct json_object *h, const char *indent)
{
    char line[512] = "";
    size_t at = 0;
    int64_t a, b;
    double s;
#define PART(...) at += (size_t)snprintf(line + at, at < sizeof(line) ? sizeof(line) - at : 0, __VA_ARGS__)
    if (rt_json_get_i64(h, "ecc_corrected", &a) && rt_json_get_i64(h, "ecc_uncorrected", &b) && (a || b))
        PART("%sECC errors %lld corrected, %lld uncorrected", at ? "; " : "", (long long)a, (long long)b);
    if (rt_json_get_i64(h, "retired_pages_sbe", &a) && rt_json_get_i64(h, "retired_pages_dbe", &b) && (a || b))
        PART("%sretired pages %lld single-bit, %lld double-bit", at ? "; " : "", (long long)a, (long long)b);
    if (rt_json_get_i64(h, "remapped_rows_corrected", &a) && rt_json_get_i64(h, "remapped_rows_uncorrected", &b) &&
        (a || b))
        PART("%sremapped rows %lld corrected, %lld uncorrected", at ? "; " : "", (long long)a, (long long)b);
    bool flag;
    if (rt_json_get_bool(h, "remap_pending", &flag) && flag)
        PART("%sa row remap is pending (reset the GPU)", at ? "; " : "");
    if (rt_json_get_bool(h, "remap_failure", &flag) && flag)
        PART("%srow remapping failed", at ? "; " : "");
    if (rt_json_get_i64(h, "xid_errors", &a) && a)
        PART("%s%lld XID error%s (last %lld)", at ? "; " : "", (long long)a, a == 1 ? "" : "s",
             (long long)i64(h, "last_xid"));
    static const char *const held[][2] = {{"throttled_power_secs", "power"},
                                          {"throttled_thermal_secs", "thermal"},
                                          {"throttled_hw_slowdown_secs", "hardware slowdown"}};
    for (size_t i = 0; i < RT_ARRAY_SIZE(held); i++)
        if (num(h, held[i][0], &s) && s >= 0.05) {
            char d[32];
            ctl_fmt_duration(d, sizeof(d), s);
            PART("%sclocks held down by %s for %s", at ? "; " : "", held[i][1], d);
        }
#undef PART
    if (at)
        printf("%s%s\n", indent, line);
}

static void print_processes(struct json_object *procs, const char *mig, double now)
{
    size_t shown = 0;
    for (size_t i = 0; i < json_object_array_length(procs); i++) {
        struct json_object *p = json_object_array_get_idx(procs, i);
        const char *m = rt_json_get_string(p, "mig_uuid");
        if ((mig || m) && (!mig || !m || strcmp(mig, m) != 0))
            continue;
        if (!shown++)
            printf("    %-8s %-16s %-24s %10s %6s  %s\n", "PID", "USER", "JOB", "VRAM", "USE", "SINCE");
        char pid[16] = "-", user[64] = "(hidden)", job[128] = "-", jobc[128], userc[64], vram[32], use[16] = "-",
             since[64];
        int64_t v;
        bool hidden = false;
        rt_json_get_bool(p, "hidden", &hidden);
        if (rt_json_get_i64(p, "pid", &v))
            snprintf(pid, sizeof(pid), "%lld", (long long)v);
        if (rt_json_get_i64(p, "uid", &v))
            ctl_fmt_user(v, user, sizeof(user));
        else if (!hidden)
            snprintf(user, sizeof(user), "?");
        if (rt_json_get_i64(p, "job_id", &v)) {
            const char *name = rt_json_get_string(p, "job_name");
            snprintf(job, sizeof(job), "%lld%s%s", (long long)v, name ? " " : "", name ? name : "");
        }
        double sm;
        if (num(p, "sm_pct", &sm))
            snprintf(use, sizeof(use), "%.0f%%", sm);
        ctl_fmt_bytes(vram, sizeof(vram), dbl(p, "vram_bytes"));
        since_text(since, sizeof(since), dbl(p, "since"), now);
        ctl_fmt_cell(userc, sizeof(userc), user, 16);
        ctl_fmt_cell(jobc, sizeof(jobc), job, 24);
        printf("    %-8s %s %s %10s %6s  %s\n", pid, userc, jobc, vram, use, since);
    }
    if (!shown)
        printf("    no process\n");
}

static void print_gpu(struct json_object *g, double now)
{
    char name[128], a[32], b[32];
    ctl_fmt_cut(name, sizeof(name), rt_json_get_string(g, "name") ?: "", 64);
    printf("GPU %lld  %s  %s\n", (long long)i64(g, "index"), name, rt_json_get_string(g, "uuid") ?: "");
    ctl_fmt_bytes(a, sizeof(a), dbl(g, "vram_used_bytes"));
    ctl_fmt_bytes(b, sizeof(b), dbl(g, "vram_total_bytes"));
    double v;
    printf("    ");
    if (num(g, "utilization_pct", &v))
        printf("%.0f%% busy, ", v);
    printf("VRAM %s of %s", a, b);
    if (num(g, "temperature_celsius", &v))
        printf(", %.0f °C", v);
    if (num(g, "power_watts", &v))
        printf(", %.0f W", v);
    if (num(g, "clock_mhz", &v))
        printf(", %.0f MHz", v);
    printf("\n");
    print_idle(g, "    ", now);
    print_gpm(rt_json_get_object(g, "gpm"), "    ");
    print_health(rt_json_get_object(g, "health"), "    ");
    struct json_object *procs = rt_json_get_array(g, "processes");
    struct json_object *mig = rt_json_get_array(g, "mig");
    for (size_t i = 0; mig && i < json_object_array_length(mig); i++) {
        struct json_object *m = json_object_array_get_idx(mig, i);
        printf("  MIG %lld  %s", (long long)i64(m, "gpu_instance_id"), rt_json_get_string(m, "uuid") ?: "");
        if (num(m, "vram_total_bytes", &v)) {
            ctl_fmt_bytes(a, sizeof(a), dbl(m, "vram_used_bytes"));
            ctl_fmt_bytes(b, sizeof(b), v);
            printf("  VRAM %s of %s", a, b);
        }
        printf("\n");
        print_idle(m, "    ", now);
        print_gpm(rt_json_get_object(m, "gpm"), "    ");
        if (procs)
            print_processes(procs, rt_json_get_string(m, "uuid"), now);
    }
    if (!procs)
        printf("    processes not known (the driver lists none to the daemon)\n");
    else if (!mig)
        print_processes(procs, NULL, now);
}

int ctl_gpus(struct ctl *ctl, int argc, char **argv)
{
    int rc = ctl_args_simple(ctl, &ctl_gpus_spec, argc, argv, NULL, 0, 0);
    if (rc)
        return rc < 0 ? 0 : rc;
    struct rt_vl_client c = {.fd = -1};
    struct json_object *reply = NULL, *rp;
    rc = ctl_simple_call(ctl, M("GetGpus"), NULL, &c, &reply, &rp);
    if (!rc) {
        struct json_object *gpus = rt_json_get_array(rp, "gpus");
        if (ctl->json) {
            ctl_print_json(stdout, rp);
        } else if (!gpus || !json_object_array_length(gpus)) {
            printf("No GPU.\n");
        } else {
            double now = dbl(rp, "taken_at");
            for (size_t i = 0; i < json_object_array_length(gpus); i++) {
                if (i)
                    printf("\n");
                print_gpu(json_object_array_get_idx(gpus, i), now);
            }
            bool all = true;
            rt_json_get_bool(rp, "all_processes_shown", &all);
            if (!all)
                printf("\n(/proc hides other users' processes from you: theirs are listed as hidden)\n");
        }
    }
    json_object_put(reply);
    rt_vl_client_close(&c);
    return rc;
}
