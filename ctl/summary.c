/* A job's summary for people, as `systemd-run --wait` and `time -v` give
 * one: what `run` prints at the end, and `stop`. */
#include "ctl.h"

#include "rt/json.h"

#include <signal.h>
#include <string.h>

static double dbl(struct json_object *o, const char *k)
{
    double v = 0;
    rt_json_get_double(o, k, &v);
    return v;
}

const char *ctl_fmt_end(char *buf, size_t size, struct json_object *job, bool brief)
{
    const char *state = rt_json_get_string(job, "state") ?: "";
    const char *abbrev;
    int64_t code, sig;
    bool running = strcmp(state, "running") == 0, stopped = strcmp(state, "stopped") == 0;
    if (rt_json_get_i64(job, "signal", &sig) && (abbrev = sigabbrev_np((int)sig)))
        snprintf(buf, size, "%sSIG%s", brief ? "" : "killed by ", abbrev);
    else if (rt_json_get_i64(job, "signal", &sig))
        snprintf(buf, size, "%s%lld", brief ? "signal " : "killed by signal ", (long long)sig);
    else if (rt_json_get_i64(job, "exit_code", &code))
        snprintf(buf, size, "%s%lld", brief ? "" : "exit status ", (long long)code);
    else if (brief)
        snprintf(buf, size, "%s", running || stopped ? "-" : "?");
    else
        snprintf(buf, size, "%s", running ? "still running" : stopped ? "tracking stopped" : "exit status unknown");
    return buf;
}

double ctl_job_memory(struct json_object *summary, const char **label)
{
    double v = 0;
    bool peak = ctl_total(summary, "memory_peak_bytes", &v);
    if (!peak) /* a job recorded before the peak was kept */
        ctl_total(summary, "peak_pss_bytes", &v);
    if (label)
        *label = peak ? "peak" : "peak PSS";
    return v;
}

void ctl_print_job_memory(FILE *f, const char *head, struct json_object *job)
{
    struct json_object *s = rt_json_get_object(job, "summary");
    char b[32];
    double v, limit = 0;
    rt_json_get_double(job, "memory_limit_bytes", &limit);
    fputs(head, f);
    const char *sep = "";
    if (!ctl_total(s, "memory_peak_bytes", &v) && !ctl_total(s, "cgroup_memory_peak_bytes", &v) &&
        !ctl_total(s, "peak_pss_bytes", &v))
        fputs("unknown (the kernel does not account for it here)", f);
    if (ctl_total(s, "memory_peak_bytes", &v)) { /* what it could not do without */
        ctl_fmt_bytes(b, sizeof(b), v);
        fprintf(f, "peak %s", b);
        sep = ", ";
    }
    if (limit > 0) {
        ctl_fmt_bytes(b, sizeof(b), limit);
        fprintf(f, " of a %s limit", b);
    }
    if (ctl_total(s, "cgroup_memory_peak_bytes", &v)) {
        ctl_fmt_bytes(b, sizeof(b), v);
        fprintf(f, "%scgroup peak %s (page cache included)", sep, b);
    }
    if (ctl_total(s, "peak_pss_bytes", &v)) {
        ctl_fmt_bytes(b, sizeof(b), v);
        fprintf(f, "%speak PSS %s", sep, b);
        sep = ", ";
    }
    if (ctl_total(s, "peak_rss_bytes", &v)) {
        ctl_fmt_bytes(b, sizeof(b), v);
        fprintf(f, "%speak RSS %s", sep, b);
    }
}

void ctl_print_job_kernel(FILE *f, const char *head, struct json_object *job)
{
    struct json_object *s = rt_json_get_object(job, "summary");
    double v;
    if (ctl_total(s, "oom_kills", &v) && v > 0)
        fprintf(f, "%sthe kernel's OOM killer killed %.0f of its processes: it needed more memory than it was "
                   "allowed\n", head, v);
    if (ctl_total(s, "pressure.memory_some_pct", &v) && v >= 10)
        fprintf(f, "%smemory pressure %.0f %%: it waited for memory that much of the time; it needed more "
                   "memory than it had\n", head, v);
    if (ctl_total(s, "throttled_pct", &v) && v >= 10)
        fprintf(f, "%sthrottled %.0f %% of the time by its CPU quota: it needed more CPU than it was allowed\n",
                head, v);
    if (ctl_total(s, "pressure.cpu_some_pct", &v) && v >= 20)
        fprintf(f, "%sCPU pressure %.0f %%: its processes waited for a CPU that much of the time (more "
                   "processes than CPUs, or a busy host)\n", head, v);
    if (ctl_total(s, "pressure.io_some_pct", &v) && v >= 20)
        fprintf(f, "%sI/O pressure %.0f %%: it waited for storage that much of the time\n", head, v);
}

void ctl_print_job_summary(FILE *f, struct json_object *job)
{
    struct json_object *s = rt_json_get_object(job, "summary");
    const char *name = rt_json_get_string(job, "name");
    int64_t id = 0;
    rt_json_get_i64(job, "id", &id);
    char dur[32], res[64], b1[32], b2[32];
    ctl_fmt_duration(dur, sizeof(dur), dbl(s, "duration_secs"));
    ctl_fmt_end(res, sizeof(res), job, false);
    fprintf(f, "Job %lld%s%s%s %s after %s: %s\n", (long long)id, name ? " (" : "", name ? name : "",
            name ? ")" : "", rt_json_get_string(job, "state"), dur, res);
    ctl_fmt_duration(b1, sizeof(b1), ctl_total0(s, "cpu_secs"));
    fprintf(f, "  CPU      %s in total, %.2f cores on average, %.2f at peak\n", b1, ctl_total0(s, "avg_cores"),
            ctl_total0(s, "peak_cores"));
    ctl_print_job_memory(f, "  Memory   ", job);
    fputc('\n', f);
    ctl_fmt_bytes(b1, sizeof(b1), ctl_total0(s, "disk_read_bytes"));
    ctl_fmt_bytes(b2, sizeof(b2), ctl_total0(s, "disk_write_bytes"));
    fprintf(f, "  Disk     read %s, written %s\n", b1, b2);
    double v;
    if (ctl_total(s, "gpu_avg_usage", &v)) {
        ctl_fmt_bytes(b1, sizeof(b1), ctl_total0(s, "gpu_peak_vram_bytes"));
        fprintf(f, "  GPU      %.2f GPUs on average, peak VRAM %s", v, b1);
        if (ctl_total(s, "gpu_energy_joules", &v))
            fprintf(f, ", %.1f J", v);
        fprintf(f, "\n");
    }
    ctl_print_job_kernel(f, "  Note     ", job);
    struct json_object *up = rt_json_get_object(job, "upload");
    if (up) {
        const char *run = rt_json_get_string(up, "run_id"), *err = rt_json_get_string(up, "last_error");
        int64_t sent = 0, pending = 0;
        rt_json_get_i64(up, "batches_sent", &sent);
        rt_json_get_i64(up, "batches_pending", &pending);
        fprintf(f, "  Upload   %s%s%s, %lld batches sent, %lld pending%s%s\n", rt_json_get_string(up, "state"),
                run ? ", run " : "", run ? run : "", (long long)sent, (long long)pending,
                err ? "; last error: " : "", err ? err : "");
    }
}
