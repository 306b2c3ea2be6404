/* Developer entry point (not installed): print N host samples as JSON Lines
 * or CSV, paced by the daemon's ticker.
 *   rt_hostsample [--proc-root DIR] [--sys-root DIR] [--interval SECS]
 *                 [--count N] [--format json|csv] */
#include "collect/host_sampler.h"
#include "system/log.h"
#include "collect/roots.h"
#include "rt/json.h"
#include "rt/sample_csv.h"
#include "rt/sample_json.h"
#include "rt/util.h"
#include "sampler/ticker.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: rt_hostsample [--proc-root DIR] [--sys-root DIR] [--interval SECS] "
               "[--count N] [--format json|csv]\n");
}

/* One line to stdout; false when stdout is gone (EPIPE), so we stop. */
static bool emit_csv(const struct rt_sample *s)
{
    char small[1024];
    size_t need = rt_sample_to_csv(s, small, sizeof(small));
    if (need < sizeof(small))
        return fputs(small, stdout) >= 0 && fflush(stdout) == 0;
    char *big = rt_xmalloc(need + 1);
    rt_sample_to_csv(s, big, need + 1);
    bool ok = fputs(big, stdout) >= 0 && fflush(stdout) == 0;
    free(big);
    return ok;
}

static bool emit_json(const struct rt_sample *s)
{
    struct json_object *o = rt_sample_to_json(s);
    bool ok = printf("%s\n", rt_json_plain(o)) >= 0 && fflush(stdout) == 0;
    json_object_put(o);
    return ok;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"proc-root", required_argument, NULL, 'p'}, {"sys-root", required_argument, NULL, 's'},
        {"interval", required_argument, NULL, 'i'},  {"count", required_argument, NULL, 'n'},
        {"format", required_argument, NULL, 'f'},    {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *proc_root = NULL, *sys_root = NULL;
    double interval = 1.0;
    uint64_t count = 1;
    bool csv = false;
    int opt;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end;
        switch (opt) {
        case 'p': proc_root = optarg; break;
        case 's': sys_root = optarg; break;
        case 'i':
            errno = 0;
            interval = strtod(optarg, &end);
            if (errno || *end || !isfinite(interval) || interval < 0 || interval > 86400) {
                fprintf(stderr, "rt_hostsample: bad --interval '%s'\n", optarg);
                return 2;
            }
            break;
        case 'n':
            if (!rt_parse_u64(optarg, &count)) {
                fprintf(stderr, "rt_hostsample: bad --count '%s'\n", optarg);
                return 2;
            }
            break;
        case 'f':
            if (strcmp(optarg, "csv") != 0 && strcmp(optarg, "json") != 0) {
                fprintf(stderr, "rt_hostsample: --format is json or csv\n");
                return 2;
            }
            csv = strcmp(optarg, "csv") == 0;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    rt_log_init(RT_LOG_STDERR, LOG_INFO);

    struct rt_roots roots;
    int err = rt_roots_open(&roots, proc_root, sys_root);
    if (err < 0) {
        fprintf(stderr, "rt_hostsample: cannot open roots: %s\n", strerror(-err));
        return 1;
    }
    struct rt_host_sampler *h = rt_host_sampler_new(&roots, interval);
    struct rt_sample s;
    rt_sample_init(&s);
    struct rt_ticker t;
    rt_ticker_init(&t, (uint64_t)llround(interval * 1e9), rt_mono_ns());
    if (csv)
        printf("%s\n", RT_CSV_HEADER);

    int rc = 0;
    for (uint64_t i = 0; i < count; i++) {
        rt_ticker_sleep(&t);
        rt_ticker_advance(&t, rt_mono_ns());
        rt_sample_reset(&s);
        rt_host_sampler_collect(h, &s);
        if (!(csv ? emit_csv(&s) : emit_json(&s))) {
            rc = 1;
            break;
        }
    }
    rt_sample_free(&s);
    rt_host_sampler_free(h);
    rt_roots_close(&roots);
    return rc;
}
