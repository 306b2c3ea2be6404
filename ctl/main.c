/* resource-trackerctl: the client of resource-trackerd. */
#include "ctl.h"
#include "insight/insight.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: resource-trackerctl [--socket PATH] [--json] COMMAND [ARGS...]\n\n"
            "Commands:\n"
            "  run [OPTIONS] -- CMD [ARGS...]   run CMD as a tracked job, exit with its status\n"
            "  start --pid PID [--name NAME]    track an existing process tree\n"
            "  stop JOB                         stop tracking JOB (id or name)\n"
            "  jobs [--running]                 list jobs\n"
            "  status [JOB]                     live host figures, or those of JOB\n"
            "  samples JOB [--format json|csv] [--follow] [--offset N]\n"
            "                                   print JOB's samples\n"
            "  info                             show the daemon\n"
            "  report JOB [-o FILE]             a self-contained HTML report of JOB\n"
            "  recommend JOB [--history N]      resources for JOB's next run\n\n"
            "Options:\n"
            "  --socket PATH   daemon socket ($RESOURCE_TRACKER_SOCKET; default: the system\n"
            "                  daemon, else your user daemon)\n"
            "  --json          machine-readable output for jobs, status, start, stop, info,\n"
            "                  recommend\n"
            "                  (also accepted after COMMAND)\n"
            "  -h, --help      this help; COMMAND --help for a command's options\n"
            "  --version       show the version\n\n"
            "Exit status: 0 success, 1 failure, 2 invalid arguments (also a job name in use),\n"
            "3 daemon unreachable, 4 permission denied, 5 no such job or process; run exits\n"
            "with CMD's status.\n");
}

int main(int argc, char **argv)
{
    struct ctl ctl = {.socket = getenv("RESOURCE_TRACKER_SOCKET")};
    if (ctl.socket && !*ctl.socket)
        ctl.socket = NULL;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--socket") == 0 && i + 1 < argc) {
            ctl.socket = argv[++i];
        } else if (strncmp(a, "--socket=", 9) == 0) {
            ctl.socket = a + 9;
        } else if (strcmp(a, "--json") == 0) {
            ctl.json = true;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("resource-trackerctl %s\n", RT_VERSION);
            return 0;
        } else {
            CTL_ERR("unknown option: %s", a);
            usage(stderr);
            return RT_EXIT_USAGE;
        }
    }
    if (i >= argc) {
        usage(stderr);
        return RT_EXIT_USAGE;
    }
    static const struct {
        const char *name;
        int (*fn)(struct ctl *, int, char **);
    } verbs[] = {
        {"run", ctl_run},       {"start", ctl_start},     {"stop", ctl_stop}, {"jobs", ctl_jobs},
        {"status", ctl_status}, {"samples", ctl_samples}, {"info", ctl_info},
        {"report", ctl_report},
        {"recommend", ctl_recommend},
    };
    for (size_t v = 0; v < sizeof(verbs) / sizeof(verbs[0]); v++)
        if (strcmp(argv[i], verbs[v].name) == 0)
            return verbs[v].fn(&ctl, argc - i, argv + i);
    CTL_ERR("unknown command: %s", argv[i]);
    usage(stderr);
    return RT_EXIT_USAGE;
}
