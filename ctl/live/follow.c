/* status --follow: like the Rust tracker without arguments, one host sample
 * per interval, but read from the daemon's host stream; or, for people, a
 * line per sample as vmstat prints them. */
#include "live/follow.h"

#include "live/stream.h"
#include "rt/json.h"
#include "rt/sample_csv.h"
#include "rt/sample_json.h"
#include "rt/util.h"

#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static int print_csv_row(struct json_object *sample, char **buf, size_t *cap)
{
    struct rt_sample s;
    rt_sample_init(&s);
    char err[128];
    int rc = RT_EXIT_OK;
    if (rt_sample_from_json(sample, &s, err, sizeof(err)) < 0) {
        CTL_ERR("malformed host sample from the daemon: %s", err);
        rc = RT_EXIT_FAILURE;
    } else {
        size_t n = rt_sample_to_csv(&s, *buf, *cap);
        if (n >= *cap) {
            *cap = n + 1;
            *buf = rt_xrealloc(*buf, *cap);
            rt_sample_to_csv(&s, *buf, *cap);
        }
        fputs(*buf, stdout);
    }
    rt_sample_free(&s);
    return rc;
}

/* Bytes in at most 5 characters, as vmstat -S and free -h: "838M", "3.2G". */
static void compact_bytes(char *buf, size_t size, double v)
{
    static const char units[] = "BKMGTP";
    int u = 0;
    while (v >= 999.5 && u < 5) {
        v /= 1024;
        u++;
    }
    snprintf(buf, size, u && v < 9.95 ? "%.1f%c" : "%.0f%c", v, units[u]);
}

#define TEXT_HEAD1 "          --- cpu cores --- ----- memory ---- -- disk/s - -- net/s --"
#define TEXT_HEAD2 "time      busy  user   sys  used avail  swap  read write    in   out"

/* One line of text: the time, busy cores (user and system), memory used,
 * available and swap used, disk and network rates (stacked devices left
 * out, as in the totals), and the GPUs' use and VRAM on GPU hosts. */
static int print_text_line(struct json_object *sample, bool head)
{
    struct rt_sample s;
    rt_sample_init(&s);
    char err[128];
    if (rt_sample_from_json(sample, &s, err, sizeof(err)) < 0) {
        CTL_ERR("malformed host sample from the daemon: %s", err);
        rt_sample_free(&s);
        return RT_EXIT_FAILURE;
    }
    bool gpu = s.has_gpu_backend && s.n_gpus;
    if (head)
        printf("%s%s\n%s%s\n", TEXT_HEAD1, gpu ? " --- gpu ---" : "", TEXT_HEAD2, gpu ? "  busy  vram" : "");
    double secs = s.has_interval ? rt_sample_interval_secs(&s) : 0, rd = 0, wr = 0, rx = 0, tx = 0, busy = 0, vram = 0;
    for (size_t i = 0; i < s.n_disks; i++)
        if (!s.disks[i].stacked)
            rd += s.disks[i].read_bytes_per_sec, wr += s.disks[i].write_bytes_per_sec;
    for (size_t i = 0; i < s.n_nets; i++)
        rx += s.nets[i].rx_bytes_per_sec, tx += s.nets[i].tx_bytes_per_sec;
    for (size_t i = 0; i < s.n_gpus; i++)
        busy += s.gpus[i].utilization_pct / 100, vram += (double)s.gpus[i].vram_used_bytes;
    char t[16], b[8][8];
    time_t now = (time_t)s.timestamp_secs;
    struct tm tm;
    strftime(t, sizeof(t), "%H:%M:%S", localtime_r(&now, &tm));
    double v[] = {(double)s.memory.used_mib * RT_MIB, (double)s.memory.available_mib * RT_MIB,
                  (double)s.memory.swap_used_mib * RT_MIB, rd, wr, rx, tx, vram};
    for (size_t i = 0; i < RT_ARRAY_SIZE(v); i++)
        compact_bytes(b[i], sizeof(b[i]), v[i]);
    /* The stream's first sample does not say its interval: its CPU seconds
     * are not rates yet. */
    char user[16] = "-", sys[16] = "-";
    if (secs > 0) {
        snprintf(user, sizeof(user), "%.2f", s.cpu.utime_secs / secs);
        snprintf(sys, sizeof(sys), "%.2f", s.cpu.stime_secs / secs);
    }
    printf("%-8s %5.2f %5s %5s %5s %5s %5s %5s %5s %5s %5s", t, s.cpu.utilization_pct, user, sys, b[0], b[1], b[2],
           b[3], b[4], b[5], b[6]);
    if (gpu)
        printf("  %4.2f %5s", busy, b[7]);
    putchar('\n');
    rt_sample_free(&s);
    return RT_EXIT_OK;
}

/* The header again after a screenful, as vmstat does in a terminal. */
static int screen_lines(void)
{
    struct winsize ws;
    return isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 4 ? ws.ws_row - 2 : 0;
}

int ctl_follow_host(struct ctl *ctl, unsigned format)
{
    struct rt_vl_client c = {.fd = -1};
    int rc = ctl_stream_open(ctl, &c, RT_VL_INTERFACE ".StreamHostSamples", NULL);
    if (rc) {
        rt_vl_client_close(&c);
        return rc;
    }
    bool csv = format == CTL_FMT_CSV;
    if (csv)
        printf("%s\n", RT_CSV_HEADER);
    char *buf = NULL;
    size_t cap = 0;
    int lines = 0, screen = format == CTL_FMT_TEXT ? screen_lines() : 0;
    for (;;) {
        struct json_object *reply;
        int r = ctl_stream_next(&c, &reply, -1);
        if (r == 0)
            continue;
        if (r != 1) {
            rc = r;
            break;
        }
        struct json_object *sample = rt_json_get_object(rt_vl_reply_params(reply), "sample");
        if (csv)
            rc = print_csv_row(sample, &buf, &cap);
        else if (format == CTL_FMT_TEXT)
            rc = print_text_line(sample, lines++ == 0 || (screen && lines % screen == 1));
        else
            printf("%s\n", rt_json_plain(sample));
        json_object_put(reply);
        if (rc || fflush(stdout) != 0 || ferror(stdout)) {
            rc = rc ? rc : RT_EXIT_FAILURE;
            break;
        }
    }
    free(buf);
    rt_vl_client_close(&c);
    return rc;
}
