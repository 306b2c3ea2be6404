/* help and version, and the overview of the command line. */
#include "args.h"
#include "ctl.h"

#include <string.h>

const struct ctl_verb *ctl_verb_find(const char *name)
{
    for (const struct ctl_verb *v = ctl_verbs; v->name; v++)
        if (strcmp(v->name, name) == 0)
            return v;
    return NULL;
}

void ctl_usage(FILE *f)
{
    fprintf(f, "Usage: resource-trackerctl [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS...]\n\nCommands:\n");
    for (const struct ctl_verb *v = ctl_verbs; v->name; v++) {
        if (!v->summary)
            continue;
        char line[256];
        int n = snprintf(line, sizeof(line), "%s%s%s", v->name, *v->synopsis ? " " : "", v->synopsis);
        if (n <= 32)
            fprintf(f, "  %-32s %s\n", line, v->summary);
        else
            fprintf(f, "  %s\n  %-32s %s\n", line, "", v->summary);
    }
    fprintf(f,
            "\nGlobal options:\n"
            "  --socket PATH       the daemon's socket ($RESOURCE_TRACKER_SOCKET; default: the\n"
            "                      system daemon, else your user daemon)\n"
            "  --json              JSON output, as --format json\n"
            "  -f, --format FMT    text, json or csv, where COMMAND prints it: text or json\n"
            "                      for jobs, status, info, start, stop and recommend; json\n"
            "                      or csv for samples and run; csv for jobs too\n"
            "  -h, --help          this overview\n"
            "  -V, --version       the version\n\n"
            "A command's options go after it ('help COMMAND' or 'COMMAND --help' lists them);\n"
            "--json and --format also go there. Short options may be bundled (-qn NAME);\n"
            "-- ends the options.\n\n"
            "Exit status: 0 success, 1 failure, 2 invalid arguments (also a value the daemon\n"
            "refuses, and a name of several running jobs), 3 daemon unreachable, 4 permission\n"
            "denied, 5 no such job or process; run exits with CMD's status.\n");
}

static const char help_usage[] =
    "Usage: resource-trackerctl help [COMMAND]\n"
    "The overview of the commands and global options, or COMMAND's options.\n\n"
    "  -h, --help              this help\n";

const struct ctl_spec ctl_help_spec = {.verb = "help", .usage = help_usage, .operand = CTL_KIND_VERB};

int ctl_help(struct ctl *ctl, int argc, char **argv)
{
    const char *name;
    int rc = ctl_args_simple(ctl, &ctl_help_spec, argc, argv, &name, 0, 1);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (!name) {
        ctl_usage(stdout);
        return RT_EXIT_OK;
    }
    const struct ctl_verb *v = ctl_verb_find(name);
    if (!v || !v->summary) {
        CTL_ERR("help: unknown command '%s'", name);
        fprintf(stderr, "Try 'resource-trackerctl help'.\n");
        return RT_EXIT_USAGE;
    }
    return v->fn(ctl, 2, (char *[]){(char *)v->name, "--help", NULL});
}

static const char version_usage[] =
    "Usage: resource-trackerctl version\n"
    "Show the client's version ('info' shows the daemon's).\n\n"
    "  -h, --help              this help\n";

const struct ctl_spec ctl_version_spec = {.verb = "version", .usage = version_usage};

int ctl_version(struct ctl *ctl, int argc, char **argv)
{
    int rc = ctl_args_simple(ctl, &ctl_version_spec, argc, argv, NULL, 0, 0);
    if (!rc)
        printf("resource-trackerctl %s\n", RT_VERSION);
    return rc < 0 ? 0 : rc;
}
