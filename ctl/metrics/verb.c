/* resource-trackerctl metrics [--jobs none|visible|all] [--keep-ended SECS]
 *                            [--http | --textfile PATH [--interval SECS]] */
#include "metrics/metrics.h"

#include "args.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define KEEP_ENDED_DEFAULT 300.0
#define KEEP_ENDED_MAX 86400.0 /* the daemon's limit for StreamJobs */
#define INTERVAL_MIN 0.1

enum { JOBS = CTL_OPT_LONG, KEEP_ENDED, HTTP, TEXTFILE, INTERVAL, TOKEN_FILE };

static const char usage[] =
    "Usage: resource-trackerctl metrics [--jobs none|visible|all] [--keep-ended SECS]\n"
    "                                   [--http [--bearer-token-file FILE] |\n"
    "                                    --textfile PATH [--interval SECS]]\n"
    "Print the host's and jobs' figures in the Prometheus text format (docs/metrics.md).\n\n"
    "  --jobs WHICH         jobs to publish: none (the host only), visible (default: the\n"
    "                       jobs you may see) or all (fails unless you are an administrator)\n"
    "  --keep-ended SECS    ended jobs stay this long, then leave the metrics (default 300)\n"
    "  --http               answer one HTTP request on stdin/stdout (socket activation)\n"
    "  --bearer-token-file FILE\n"
    "                       with --http: the token a scraper must send (Authorization:\n"
    "                       Bearer); required to publish jobs over HTTP\n"
    "  --textfile PATH      write PATH atomically for node_exporter's textfile collector\n"
    "  --interval SECS      with --textfile: rewrite it every SECS until stopped\n"
    "  -h, --help           this help\n";

static const struct ctl_opt opts[] = {
    {"jobs", JOBS, "WHICH", "which jobs is none, visible or all", CTL_KIND_NONE},
    {"keep-ended", KEEP_ENDED, "SECS", "a retention is a number of seconds from 0 to 86400", CTL_KIND_NONE},
    {"http", HTTP, NULL, NULL, CTL_KIND_NONE},
    {"bearer-token-file", TOKEN_FILE, "FILE", NULL, CTL_KIND_FILE},
    {"textfile", TEXTFILE, "PATH", NULL, CTL_KIND_FILE},
    {"interval", INTERVAL, "SECS", "an interval is a number of seconds from 0.1 to 3600", CTL_KIND_NONE},
    {NULL, 0, NULL, NULL, CTL_KIND_NONE},
};

const struct ctl_spec ctl_metrics_spec = {.verb = "metrics", .usage = usage, .opts = opts};

static bool parse_secs(const char *s, double min, double max, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v < min || v > max)
        return false;
    *out = v;
    return true;
}

int ctl_metrics(struct ctl *ctl, int argc, char **argv)
{
    struct ctl_metrics m = {.ctl = ctl, .publish = CTL_PUBLISH_VISIBLE, .keep_ended_secs = KEEP_ENDED_DEFAULT};
    const char *textfile = NULL;
    bool http = false;
    double interval = 0;
    struct ctl_args a;
    ctl_args_init(&a, ctl, &ctl_metrics_spec);
    for (int o; (o = ctl_args_next(&a, argc, argv)) != CTL_ARGS_END;) {
        switch (o) {
        case CTL_ARGS_STOP: return a.rc;
        case JOBS:
            if (strcmp(optarg, "none") == 0)
                m.publish = CTL_PUBLISH_NONE;
            else if (strcmp(optarg, "visible") == 0)
                m.publish = CTL_PUBLISH_VISIBLE;
            else if (strcmp(optarg, "all") == 0)
                m.publish = CTL_PUBLISH_ALL;
            else
                return ctl_args_invalid(&a, o, optarg);
            break;
        case KEEP_ENDED:
            if (!parse_secs(optarg, 0, KEEP_ENDED_MAX, &m.keep_ended_secs))
                return ctl_args_invalid(&a, o, optarg);
            break;
        case HTTP: http = true; break;
        case TEXTFILE: textfile = optarg; break;
        case TOKEN_FILE: m.token_file = *optarg ? optarg : NULL; break; /* the unit's empty default */
        case INTERVAL:
            if (!parse_secs(optarg, INTERVAL_MIN, 3600, &interval))
                return ctl_args_invalid(&a, o, optarg);
            break;
        }
    }
    int rc = ctl_args_operands(&a, argc, argv, NULL, 0, 0);
    if (rc)
        return rc;
    if (http && textfile)
        return ctl_args_error(&a, "--http and --textfile exclude each other");
    if (interval > 0 && !textfile)
        return ctl_args_error(&a, "--interval goes with --textfile");
    if (m.token_file && !http)
        return ctl_args_error(&a, "--bearer-token-file goes with --http");
    if (http)
        return ctl_metrics_http(&m);
    if (textfile)
        return ctl_metrics_textfile(&m, textfile, interval);
    char *text = NULL;
    size_t len = 0;
    rc = ctl_metrics_collect(&m, &text, &len);
    if (!rc && (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0)) {
        CTL_ERR("cannot write the metrics");
        rc = RT_EXIT_FAILURE;
    }
    free(text);
    return rc;
}
