/* notify: where the ends of the caller's jobs are told when a job names no
 * target of its own (SetNotifyDefaults, GetNotifyDefaults). */
#include "verbs/verbs.h"

#include <string.h>

static const char usage[] =
    "Usage: resource-trackerctl notify [--set TARGET... | --clear] [--json]\n"
    "Where the ends of your jobs are told when a job names no target of its own\n"
    "(run --notify): also your Slurm jobs and containers that the daemon adopts.\n"
    "A target is a webhook URL (http:// or https://: a JSON POST) or mailto:ADDRESS;\n"
    "up to 4. The daemon keeps them; nobody else sees them. Without an option, show them.\n\n"
    "  --set TARGET...         these targets, replacing those set before\n"
    "  --clear                 none\n"
    "  -f, --format FORMAT     text or json; --json is --format json\n"
    "  -h, --help              this help\n";

enum { OPT_SET = CTL_OPT_LONG + 1, OPT_CLEAR };

static const struct ctl_opt opts[] = {
    {"set", OPT_SET, NULL, NULL, CTL_KIND_NONE},
    {"clear", OPT_CLEAR, NULL, NULL, CTL_KIND_NONE},
    {NULL, 0, NULL, NULL, CTL_KIND_NONE},
};

const struct ctl_spec ctl_notify_spec = {
    .verb = "notify",
    .usage = usage,
    .opts = opts,
    .formats = CTL_FMT_TEXT | CTL_FMT_JSON,
};

int ctl_notify(struct ctl *ctl, int argc, char **argv)
{
    struct ctl_args a;
    bool set = false, clear = false;
    ctl_args_init(&a, ctl, &ctl_notify_spec);
    for (int o; (o = ctl_args_next(&a, argc, argv)) != CTL_ARGS_END;) {
        if (o == CTL_ARGS_STOP)
            return a.rc;
        set |= o == OPT_SET;
        clear |= o == OPT_CLEAR;
    }
    if (set && clear)
        return ctl_args_error(&a, "--set and --clear go alone");
    if (!set && ctl_args_operands(&a, argc, argv, NULL, 0, 0))
        return RT_EXIT_USAGE;
    if (set && ctl_args_operands(&a, argc, argv, NULL, 1, 4))
        return RT_EXIT_USAGE;
    struct rt_vl_client c = {.fd = -1};
    struct json_object *reply = NULL, *rp, *params = NULL;
    int rc;
    if (set || clear) {
        struct json_object *targets = json_object_new_array();
        for (int i = optind; set && i < argc; i++)
            json_object_array_add(targets, json_object_new_string(argv[i]));
        params = json_object_new_object();
        json_object_object_add(params, "targets", targets);
        ctl_args_source("targets", "notify --set", NULL);
        rc = ctl_simple_call(ctl, M("SetNotifyDefaults"), params, &c, &reply, &rp);
    } else {
        rc = ctl_simple_call(ctl, M("GetNotifyDefaults"), NULL, &c, &reply, &rp);
        struct json_object *t = rc ? NULL : rt_json_get_array(rp, "targets");
        if (t && ctl->json)
            ctl_print_json(stdout, rp);
        else if (t && !json_object_array_length(t))
            fprintf(stderr, "no notification targets: jobs without their own are told to no one\n");
        for (size_t i = 0; t && !ctl->json && i < json_object_array_length(t); i++)
            printf("%s\n", json_object_get_string(json_object_array_get_idx(t, i)));
    }
    json_object_put(reply);
    rt_vl_client_close(&c);
    return rc;
}
