/* resource-trackerctl: the client of resource-trackerd. */
#include "args.h"
#include "ctl.h"
#include "insight/insight.h"

#include <stdlib.h>

/* The verbs: a name, the function, its command line (NULL when the verb
 * parses its options by itself), and its line in the overview. */
const struct ctl_verb ctl_verbs[] = {
    {"run", ctl_run, &ctl_run_spec, "[OPTIONS] [--] CMD [ARGS...]", "run CMD as a tracked job, exit with its status"},
    {"start", ctl_start, &ctl_start_spec, "--pid PID [--name NAME]", "track an existing process tree"},
    {"stop", ctl_stop, &ctl_stop_spec, "[--user USER] JOB", "stop tracking JOB (an id or a name)"},
    {"jobs", ctl_jobs, &ctl_jobs_spec,
     "[--running] [--name NAME] [--user USER] [--since TIME] [--limit N] [--long | -o LIST]",
     "list jobs, newest first"},
    {"status", ctl_status, &ctl_status_spec, "[--user USER] [JOB]", "live host figures, or those of JOB"},
    {"samples", ctl_samples, &ctl_samples_spec, "[--format json|csv] [--follow] [--offset N] JOB",
     "print JOB's samples"},
    {"gpus", ctl_gpus, &ctl_gpus_spec, "", "every GPU, who holds it and whether it is idle"},
    {"usage", ctl_usage_report, &ctl_usage_spec, "[--by user|name|job] [--since TIME] [--user USER]",
     "GPU-hours held, busy and idle, CPU and memory per user, name or job"},
    {"info", ctl_info, &ctl_info_spec, "", "show the daemon"},
    {"notify", ctl_notify, &ctl_notify_spec, "[--set TARGET... | --clear]", "where your jobs' ends are told"},
    {"report", ctl_report, &ctl_report_spec, "[-o FILE] JOB", "a self-contained HTML report of JOB"},
    {"recommend", ctl_recommend, &ctl_recommend_spec, "[--history N] JOB", "resources for JOB's next run"},
    {"top", ctl_top, &ctl_top_spec, "[--sort COLUMN] [--mine] [--iterations N]",
     "a live view of the host and the jobs you may see"},
    {"metrics", ctl_metrics, &ctl_metrics_spec, "[--jobs WHICH] [--http | --textfile PATH]",
     "the figures in the Prometheus text format"},
    {"help", ctl_help, &ctl_help_spec, "[COMMAND]", "this overview, or COMMAND's options"},
    {"version", ctl_version, &ctl_version_spec, "", "show the version"},
    {"__complete", ctl_complete, NULL, NULL, NULL}, /* for the bash completion */
    {NULL, NULL, NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
    struct ctl ctl = {.socket = getenv("RESOURCE_TRACKER_SOCKET")};
    if (ctl.socket && !*ctl.socket)
        ctl.socket = NULL;
    struct ctl_args a;
    ctl_args_init(&a, &ctl, &ctl_global_spec);
    for (int o; (o = ctl_args_next(&a, argc, argv)) != CTL_ARGS_END;) {
        switch (o) {
        case CTL_ARGS_STOP:
            return a.rc;
        case 'h':
            ctl_usage(stdout);
            return RT_EXIT_OK;
        case 'V':
            return ctl_version(&ctl, 1, (char *[]){"version", NULL});
        case CTL_GLOBAL_SOCKET:
            ctl.socket = optarg;
            break;
        case CTL_GLOBAL_JSON:
            ctl.format = CTL_FMT_JSON;
            break;
        case 'f':
            if (!(ctl.format = ctl_format_parse(optarg)))
                return ctl_args_invalid(&a, o, optarg);
            break;
        }
    }
    if (optind >= argc) {
        CTL_ERR("a COMMAND is missing");
        ctl_usage(stderr);
        return RT_EXIT_USAGE;
    }
    const struct ctl_verb *v = ctl_verb_find(argv[optind]);
    if (!v) {
        CTL_ERR("unknown command '%s'", argv[optind]);
        fprintf(stderr, "Try 'resource-trackerctl help'.\n");
        return RT_EXIT_USAGE;
    }
    return v->fn(&ctl, argc - optind, argv + optind);
}
