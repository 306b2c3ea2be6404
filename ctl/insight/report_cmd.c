/* resource-trackerctl report JOB [-o FILE] [--history N] [--keeper-url URL] [--no-prices] */
#include "insight/insight.h"
#include "insight/options.h"
#include "insight/report.h"

#include "rt/json.h"
#include "rt/util.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "Usage: resource-trackerctl report JOB [-o FILE] [--history N] [--keeper-url URL] [--no-prices]\n"
    "Write a self-contained HTML report of JOB: the job, the host, charts of the job\n"
    "against the host, statistics with the last N (default 5) ended runs of the same\n"
    "name, the recommendation for the next run and, when the price source answers,\n"
    "the cheapest cloud server that fits.\n"
    "  -o, --output FILE     write to FILE (- for stdout, the default when it is not a terminal)\n"
    "  -n, --history N       earlier runs to compare and combine (0 to 100)\n"
    "      --keeper-url URL  the Spare Cores Keeper API ($RESOURCE_TRACKER_KEEPER_URL;\n"
    "                        default " INSIGHT_KEEPER_URL "; \"off\" turns it off)\n"
    "      --no-prices       no price lookup: nothing leaves the machine\n";

struct opts {
    const char *output;
    unsigned history;
    const char *keeper;      /* NULL: prices off */
    const char *off_reason;
};

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option longs[] = {
        {"output", required_argument, NULL, 'o'},
        {"history", required_argument, NULL, 'n'},
        {"keeper-url", required_argument, NULL, 'k'},
        {"no-prices", no_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    const char *env = getenv("RESOURCE_TRACKER_KEEPER_URL");
    o->history = INSIGHT_DEFAULT_HISTORY;
    o->keeper = env ? env : INSIGHT_KEEPER_URL;
    o->off_reason = "RESOURCE_TRACKER_KEEPER_URL is off";
    bool no_prices = false;
    int c;
    optind = 0; /* a fresh scan of this verb's arguments */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:n:h", longs, NULL)) != -1) {
        switch (c) {
        case 'o':
            o->output = optarg;
            break;
        case 'n':
            if (!insight_opt_history("report", optarg, &o->history))
                return RT_EXIT_USAGE;
            break;
        case 'k':
            o->keeper = optarg;
            o->off_reason = "--keeper-url off";
            break;
        case 'P':
            no_prices = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return -1;
        default:
            insight_opt_error("report", c, argv, optind, optopt);
            fputs(usage, stderr);
            return RT_EXIT_USAGE;
        }
    }
    if (!insight_opt_job("report", argc, argv, optind)) {
        fputs(usage, stderr);
        return RT_EXIT_USAGE;
    }
    if (no_prices) {
        o->keeper = NULL;
        o->off_reason = "--no-prices";
    } else if (!*o->keeper || strcmp(o->keeper, "off") == 0) {
        o->keeper = NULL;
    } else if (!rt_str_starts_with(o->keeper, "http://") && !rt_str_starts_with(o->keeper, "https://")) {
        CTL_ERR("report: --keeper-url (or RESOURCE_TRACKER_KEEPER_URL) needs an http:// or https:// URL, or "
                "\"off\", not '%s'",
                o->keeper);
        return RT_EXIT_USAGE;
    }
    if (!o->output && isatty(STDOUT_FILENO)) {
        CTL_ERR("report: the report is an HTML file: give -o FILE, or redirect the output");
        return RT_EXIT_USAGE;
    }
    return 0;
}

/* Write next to path and rename, so a failure never leaves half a file. */
static int write_file(const char *path, const struct insight_report *r)
{
    if (!path || strcmp(path, "-") == 0) {
        bool ok = insight_report_write(stdout, r) && fflush(stdout) == 0;
        if (!ok)
            CTL_ERR("report: cannot write to stdout: %s", strerror(errno));
        return ok ? 0 : RT_EXIT_FAILURE;
    }
    char *tmp = rt_xasprintf("%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        CTL_ERR("report: cannot create a file next to %s: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        free(tmp);
        return RT_EXIT_FAILURE;
    }
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask); /* mkstemp makes it 0600; a report is an ordinary file */
    bool ok = insight_report_write(f, r);
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) < 0) {
        CTL_ERR("report: cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        free(tmp);
        return RT_EXIT_FAILURE;
    }
    free(tmp);
    return 0;
}

int ctl_report(struct ctl *ctl, int argc, char **argv)
{
    struct opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    struct insight_dygraphs dy;
    char err[512];
    if (insight_dygraphs_load(&dy, err, sizeof(err)) < 0) {
        CTL_ERR("report: %s", err);
        return RT_EXIT_FAILURE;
    }
    struct rt_vl_client c = {.fd = -1};
    struct insight_analysis a = {0};
    struct insight_host host = {0};
    struct insight_prices prices = {0};
    rc = insight_analysis_fetch(ctl, argv[optind], o.history, true, &c, &a);
    if (!rc)
        rc = insight_host_load(&c, &host);
    rt_vl_client_close(&c);
    if (!rc && o.keeper) {
        struct json_object *cloud = host.cloud;
        insight_keeper_lookup(o.keeper, &a.rec, rt_json_get_string(cloud, "vendor_id"),
                              rt_json_get_string(cloud, "region_id"), rt_json_get_string(cloud, "instance_type"),
                              &prices);
        if (prices.error[0])
            CTL_ERR("report: no prices: %s did not answer (%s); the report has everything else", o.keeper,
                    prices.error);
    }
    if (!rc) {
        struct insight_report r = {
            .a = &a,
            .host = &host,
            .prices = &prices,
            .prices_off = o.off_reason,
            .keeper_url = o.keeper,
            .dy = &dy,
            .generated_at = (double)time(NULL),
        };
        rc = write_file(o.output, &r);
    }
    insight_host_free(&host);
    insight_analysis_free(&a);
    insight_dygraphs_free(&dy);
    return rc;
}
