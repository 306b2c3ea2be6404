/* A job's summary for people, as `systemd-run --wait` and `time -v` give
 * one: what `run` prints at the end, and `stop`. */
#include "ctl.h"

#include "rt/json.h"
#include "rt/text.h"
#include "rt/util.h"

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
    bool running = strcmp(state, "running") == 0, stopped = strcmp(state, "stopped") == 0, not_started;
    if (rt_json_get_i64(job, "signal", &sig) && (abbrev = sigabbrev_np((int)sig)))
        snprintf(buf, size, "%sSIG%s", brief ? "" : "killed by ", abbrev);
    else if (rt_json_get_i64(job, "signal", &sig))
        snprintf(buf, size, "%s%lld", brief ? "signal " : "killed by signal ", (long long)sig);
    else if (rt_json_get_i64(job, "exit_code", &code))
        snprintf(buf, size, "%s%lld%s", brief ? "" : "exit status ", (long long)code,
                 brief || !rt_json_get_bool(job, "not_started", &not_started) || !not_started ? ""
                                                                                      : " (the command did not start)");
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
        sep = ", ";
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

void ctl_job_tracking(struct json_object *job, char *buf, size_t size)
{
    struct json_object *tr = rt_json_get_object(job, "tracking");
    const char *kind = rt_json_get_string(tr, "kind"), *cg = rt_json_get_string(tr, "cgroup");
    const char *why = rt_json_get_string(tr, "why");
    int n = snprintf(buf, size, "%s%s%s%s%s",
                     kind && strcmp(kind, "cgroup") == 0 ? "as the cgroup " : "as a process tree", cg ? cg : "",
                     why ? " (no cgroup: " : "", why ? why : "", why ? ")" : "");
    /* Adopted (docs/admin.md): what it is to its scheduler or runtime. */
    struct json_object *sched = rt_json_get_object(job, "scheduler"), *ct = rt_json_get_object(job, "container");
    bool adopted = false;
    int64_t sid;
    if (!rt_json_get_bool(tr, "adopted", &adopted) || !adopted || n < 0 || (size_t)n >= size)
        return;
    if (rt_json_get_i64(sched, "job_id", &sid))
        snprintf(buf + n, size - (size_t)n, ", adopted: Slurm job %lld", (long long)sid);
    else if (ct)
        snprintf(buf + n, size - (size_t)n, ", adopted: %s container %.12s", rt_json_get_string(ct, "runtime") ?: "?",
                 rt_json_get_string(ct, "id") ?: "?");
    else
        snprintf(buf + n, size - (size_t)n, ", adopted");
}

/* Whether the daemon's notes (docs/efficiency.md) say it already, with the fix. */
static bool has_note(struct json_object *job, const char *id)
{
    struct json_object *notes = rt_json_get_array(job, "notes");
    for (size_t i = 0; notes && i < json_object_array_length(notes); i++) {
        const char *n = rt_json_get_string(json_object_array_get_idx(notes, i), "id");
        if (n && strcmp(n, id) == 0)
            return true;
    }
    return false;
}

void ctl_print_job_kernel(FILE *f, const char *head, struct json_object *job)
{
    struct json_object *s = rt_json_get_object(job, "summary");
    double v;
    if (ctl_total(s, "oom_kills", &v) && v > 0 && !has_note(job, "oom_killed"))
        fprintf(f, "%sthe kernel's OOM killer killed %.0f of its processes: it needed more memory than it was "
                   "allowed\n", head, v);
    if (ctl_total(s, "pressure.memory_some_pct", &v) && v >= 10 && !has_note(job, "memory_pressure"))
        fprintf(f, "%smemory pressure %.0f %%: it waited for memory that much of the time; it needed more "
                   "memory than it had\n", head, v);
    if (ctl_total(s, "throttled_pct", &v) && v >= 10 && !has_note(job, "cpu_throttled"))
        fprintf(f, "%sthrottled %.0f %% of the time by its CPU quota: it needed more CPU than it was allowed\n",
                head, v);
    if (ctl_total(s, "pressure.cpu_some_pct", &v) && v >= 20)
        fprintf(f, "%sCPU pressure %.0f %%: its processes waited for a CPU that much of the time (more "
                   "processes than CPUs, or a busy host)\n", head, v);
    if (ctl_total(s, "pressure.io_some_pct", &v) && v >= 20)
        fprintf(f, "%sI/O pressure %.0f %%: it waited for storage that much of the time\n", head, v);
}

void ctl_fmt_request(char *buf, size_t size, struct json_object *req)
{
    double v;
    size_t n = 0;
    buf[0] = '\0';
    if (rt_json_get_double(req, "cpus", &v))
        n += (size_t)snprintf(buf + n, size - n, "%g CPU%s", v, v == 1 ? "" : "s");
    if (n < size && rt_json_get_double(req, "memory_bytes", &v)) {
        char b[32];
        ctl_fmt_bytes(b, sizeof(b), v);
        n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "", b);
    }
    if (n < size && rt_json_get_double(req, "gpus", &v))
        snprintf(buf + n, size - n, "%s%g GPU%s", n ? ", " : "", v, v == 1 ? "" : "s");
}

void ctl_print_request(FILE *f, struct json_object *job, const char *indent)
{
    struct json_object *req = rt_json_get_object(job, "request"), *eff = rt_json_get_object(job, "efficiency");
    struct json_object *notes = rt_json_get_array(job, "notes");
    char asked[128];
    ctl_fmt_request(asked, sizeof(asked), req);
    if (asked[0]) {
        fprintf(f, "%sAsked    %s", indent, asked);
        static const char *const keys[] = {"cpu_pct", "memory_pct", "gpu_pct"}, *const what[] = {"CPU", "memory", "GPU"};
        const char *sep = "; efficiency ";
        for (size_t i = 0; i < 3; i++) {
            double v;
            if (rt_json_get_double(eff, keys[i], &v)) {
                fprintf(f, "%s%s %.0f%%", sep, what[i], v);
                sep = ", ";
            }
        }
        fprintf(f, "\n");
    }
    for (size_t i = 0; notes && i < json_object_array_length(notes); i++) {
        const char *text = rt_json_get_string(json_object_array_get_idx(notes, i), "text");
        if (text)
            fprintf(f, "%sNote     %s\n", indent, text);
    }
}

/* "1 XID error, ECC errors 3 corrected, 1 uncorrected, 1 page retired;
 * clocks held down by power 3.2s; busy but stalled 12.0% of the time" from
 * what the summary has; "" when all is well or nothing is known. */
static void gpu_health_text(struct json_object *s, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    double xids = 0, corr = 0, unc = 0, pages = 0, v;
#define PART(sep, ...) \
    at += (size_t)snprintf(buf + at, at < size ? size - at : 0, "%s", at ? (sep) : ""), \
        at += (size_t)snprintf(buf + at, at < size ? size - at : 0, __VA_ARGS__)
    if (ctl_total(s, "gpu_xid_errors", &xids) && xids > 0)
        PART(", ", "%.0f XID error%s", xids, xids == 1 ? "" : "s");
    ctl_total(s, "gpu_ecc_errors.corrected", &corr);
    ctl_total(s, "gpu_ecc_errors.uncorrected", &unc);
    if (corr > 0 || unc > 0)
        PART(", ", "ECC errors %.0f corrected, %.0f uncorrected", corr, unc);
    if (ctl_total(s, "gpu_pages_retired", &pages) && pages > 0)
        PART(", ", "%.0f page%s retired", pages, pages == 1 ? "" : "s");
    static const char *const held[][2] = {{"gpu_clocks_held.power_secs", "power"},
                                          {"gpu_clocks_held.thermal_secs", "heat"},
                                          {"gpu_clocks_held.hw_slowdown_secs", "a hardware slowdown"}};
    bool first = true;
    for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++)
        if (ctl_total(s, held[i][0], &v) && v >= 0.05) {
            PART(first ? "; " : ", ", "%s%s %.1fs", first ? "clocks held down by " : "", held[i][1], v);
            first = false;
        }
    if (ctl_total(s, "gpu_stalled_pct", &v) && v > 0)
        PART("; ", "busy but stalled %.1f%% of the time", v);
#undef PART
}

void ctl_print_gpu_health(FILE *f, const char *indent, struct json_object *s)
{
    char line[512];
    double sm, occ, tensor, dram;
    gpu_health_text(s, line, sizeof(line));
    if (line[0])
        fprintf(f, "%sGPU health %s\n", indent, line);
    if (ctl_total(s, "gpm.sm_active_pct", &sm) && ctl_total(s, "gpm.sm_occupancy_pct", &occ) &&
        ctl_total(s, "gpm.tensor_active_pct", &tensor) && ctl_total(s, "gpm.dram_bw_pct", &dram))
        fprintf(f, "%sGPM      SM active %.1f%%, occupancy %.1f%%, tensor %.1f%%, DRAM bandwidth %.1f%%\n", indent,
                sm, occ, tensor, dram);
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
    ctl_print_job_kernel(f, "  Note     ", job);
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
        ctl_print_gpu_health(f, "  ", s);
    }
    ctl_print_request(f, job, "  ");
    struct json_object *up = rt_json_get_object(job, "upload");
    if (up) {
        /* The run id and the error are the server's words. */
        char run[256], err[1024];
        rt_escape_into(run, sizeof(run), rt_json_get_string(up, "run_id"));
        rt_escape_into(err, sizeof(err), rt_json_get_string(up, "last_error"));
        int64_t sent = 0, pending = 0;
        rt_json_get_i64(up, "batches_sent", &sent);
        rt_json_get_i64(up, "batches_pending", &pending);
        fprintf(f, "  Upload   %s%s%s, %lld batches sent, %lld pending%s%s\n", rt_json_get_string(up, "state"),
                *run ? ", run " : "", run, (long long)sent, (long long)pending, *err ? "; last error: " : "",
                err);
    }
}
