/* resource-trackerctl report JOB [-o FILE] [--history N] [--keeper-url URL] [--no-prices] */
#include "args.h"
#include "insight/insight.h"
#include "insight/options.h"
#include "insight/report.h"

#include "rt/json.h"
#include "rt/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "Usage: resource-trackerctl report [OPTIONS] JOB\n"
    "Write a self-contained HTML report of JOB: the job, the host, charts of the job\n"
    "against the host, statistics with the last N (default 5) ended runs of the same\n"
    "name, the recommendation for the next run and, when the price source answers,\n"
    "the cheapest cloud server that fits.\n\n"
    "  -o, --output FILE       write to FILE (- for stdout, the default when it is not\n"
    "                          a terminal)\n"
    "  -n, --history N         earlier runs to compare and combine (0 to 100)\n"
    "  --keeper-url URL        the Spare Cores Keeper API ($RESOURCE_TRACKER_KEEPER_URL;\n"
    "                          default " INSIGHT_KEEPER_URL ";\n"
    "                          \"off\" turns it off)\n"
    "  --no-prices             no price lookup: nothing leaves the machine\n"
    "  -h, --help              this help\n";

enum { KEEPER = CTL_OPT_LONG, NO_PRICES };

static const struct ctl_opt opts[] = {
    {"output", 'o', "FILE", NULL, CTL_KIND_FILE},
    {"history", 'n', "N", INSIGHT_RULE_HISTORY, CTL_KIND_NONE},
    {"keeper-url", KEEPER, "URL", NULL, CTL_KIND_NONE},
    {"no-prices", NO_PRICES, NULL, NULL, CTL_KIND_NONE},
    {NULL, 0, NULL, NULL, CTL_KIND_NONE},
};

const struct ctl_spec ctl_report_spec = {
    .verb = "report",
    .usage = usage,
    .opts = opts,
    .operand = CTL_KIND_JOB,
};

struct opts {
    const char *job;
    const char *output;
    unsigned history;
    const char *keeper;      /* NULL: prices off */
    const char *off_reason;
};

static int parse(struct ctl *ctl, int argc, char **argv, struct opts *o)
{
    const char *env = getenv("RESOURCE_TRACKER_KEEPER_URL");
    o->history = INSIGHT_DEFAULT_HISTORY;
    o->keeper = env ? env : INSIGHT_KEEPER_URL;
    o->off_reason = "RESOURCE_TRACKER_KEEPER_URL is off";
    bool no_prices = false;
    struct ctl_args a;
    ctl_args_init(&a, ctl, &ctl_report_spec);
    for (int c; (c = ctl_args_next(&a, argc, argv)) != CTL_ARGS_END;) {
        switch (c) {
        case CTL_ARGS_STOP:
            return a.rc ? a.rc : -1;
        case 'o':
            o->output = optarg;
            break;
        case 'n':
            if (!insight_opt_history(optarg, &o->history))
                return ctl_args_invalid(&a, c, optarg);
            break;
        case KEEPER:
            o->keeper = optarg;
            o->off_reason = "--keeper-url off";
            break;
        case NO_PRICES:
            no_prices = true;
            break;
        }
    }
    int rc = ctl_args_operands(&a, argc, argv, &o->job, 1, 1);
    if (rc)
        return rc;
    if (no_prices) {
        o->keeper = NULL;
        o->off_reason = "--no-prices";
    } else if (!*o->keeper || strcmp(o->keeper, "off") == 0) {
        o->keeper = NULL;
    } else if (!rt_str_starts_with(o->keeper, "http://") && !rt_str_starts_with(o->keeper, "https://")) {
        return ctl_args_error(&a, "--keeper-url (or RESOURCE_TRACKER_KEEPER_URL) needs an http:// or https:// "
                                  "URL, or \"off\", not '%s'",
                              o->keeper);
    }
    if (!o->output && isatty(STDOUT_FILENO))
        return ctl_args_error(&a, "the report is an HTML file: give -o FILE, or redirect the output");
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
    int rc = parse(ctl, argc, argv, &o);
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
    rc = insight_analysis_fetch(ctl, o.job, o.history, true, &c, &a);
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
