/* A job's summary for people, as `systemd-run --wait` and `time -v` give
 * one: what `run` prints at the end, and `stop`. */
#include "ctl.h"

#include "rt/json.h"
#include "rt/util.h"

#include <signal.h>
#include <string.h>

static double dbl(struct json_object *o, const char *k)
{
    double v = 0;
    rt_json_get_double(o, k, &v);
    return v;
}

/* "exit status 3", "killed by signal 9 (KILL)", "exit status unknown" */
static void result(char *buf, size_t size, struct json_object *job)
{
    const char *state = rt_json_get_string(job, "state");
    int64_t code, sig;
    if (state && strcmp(state, "stopped") == 0)
        snprintf(buf, size, "tracking stopped");
    else if (rt_json_get_i64(job, "signal", &sig))
        snprintf(buf, size, "killed by signal %lld (%s)", (long long)sig, sigabbrev_np((int)sig) ?: "?");
    else if (rt_json_get_i64(job, "exit_code", &code))
        snprintf(buf, size, "exit status %lld", (long long)code);
    else if (state && strcmp(state, "running") == 0)
        snprintf(buf, size, "still running");
    else
        snprintf(buf, size, "exit status unknown");
}

void ctl_print_job_summary(FILE *f, struct json_object *job)
{
    struct json_object *s = rt_json_get_object(job, "summary");
    const char *name = rt_json_get_string(job, "name");
    int64_t id = 0;
    rt_json_get_i64(job, "id", &id);
    char dur[32], res[64], b1[32], b2[32];
    ctl_fmt_duration(dur, sizeof(dur), dbl(s, "duration_secs"));
    result(res, sizeof(res), job);
    fprintf(f, "Job %lld%s%s%s %s after %s: %s\n", (long long)id, name ? " (" : "", name ? name : "",
            name ? ")" : "", rt_json_get_string(job, "state"), dur, res);
    ctl_fmt_duration(b1, sizeof(b1), dbl(s, "cpu_secs"));
    fprintf(f, "  CPU      %s in total, %.2f cores on average, %.2f at peak\n", b1, dbl(s, "avg_cores"),
            dbl(s, "peak_cores"));
    ctl_fmt_bytes(b1, sizeof(b1), dbl(s, "peak_rss_bytes"));
    ctl_fmt_bytes(b2, sizeof(b2), dbl(s, "peak_pss_bytes"));
    fprintf(f, "  Memory   peak RSS %s, peak PSS %s\n", b1, b2);
    ctl_fmt_bytes(b1, sizeof(b1), dbl(s, "disk_read_bytes"));
    ctl_fmt_bytes(b2, sizeof(b2), dbl(s, "disk_write_bytes"));
    fprintf(f, "  Disk     read %s, written %s\n", b1, b2);
    double v;
    if (rt_json_get_double(s, "gpu_avg_usage", &v)) {
        ctl_fmt_bytes(b1, sizeof(b1), dbl(s, "gpu_peak_vram_bytes"));
        fprintf(f, "  GPU      %.2f GPUs on average, peak VRAM %s", v, b1);
        if (rt_json_get_double(s, "gpu_energy_joules", &v))
            fprintf(f, ", %.1f J", v);
        fprintf(f, "\n");
    }
    struct json_object *up = rt_json_get_object(job, "upload");
    if (up) {
        /* The run id and the error are the server's words. */
        char run[256], err[1024];
        rt_text_safe(run, sizeof(run), rt_json_get_string(up, "run_id"));
        rt_text_safe(err, sizeof(err), rt_json_get_string(up, "last_error"));
        int64_t sent = 0, pending = 0;
        rt_json_get_i64(up, "batches_sent", &sent);
        rt_json_get_i64(up, "batches_pending", &pending);
        fprintf(f, "  Upload   %s%s%s, %lld batches sent, %lld pending%s%s\n", rt_json_get_string(up, "state"),
                *run ? ", run " : "", run, (long long)sent, (long long)pending, *err ? "; last error: " : "",
                err);
    }
}
