/* info: the daemon this client talks to, and who the caller is to it. */
#include "verbs/verbs.h"

static const char usage[] =
    "Usage: resource-trackerctl info [--json]\n"
    "Show the daemon this client talks to, and whether you are an administrator.\n\n"
    "  -f, --format FORMAT     text or json; --json is --format json\n"
    "  -h, --help              this help\n";

const struct ctl_spec ctl_info_spec = {
    .verb = "info",
    .usage = usage,
    .formats = CTL_FMT_TEXT | CTL_FMT_JSON,
};

int ctl_info(struct ctl *ctl, int argc, char **argv)
{
    int rc = ctl_args_simple(ctl, &ctl_info_spec, argc, argv, NULL, 0, 0);
    if (rc)
        return rc < 0 ? 0 : rc;
    struct rt_vl_client c = {.fd = -1};
    struct json_object *reply = NULL, *rp;
    rc = ctl_simple_call(ctl, M("Info"), NULL, &c, &reply, &rp);
    if (!rc) {
        if (ctl->json) {
            json_object_object_add(rp, "socket", json_object_new_string(ctl->used_socket));
            ctl_print_json(stdout, rp);
        } else {
            char up[32], user[64];
            ctl_fmt_duration(up, sizeof(up), dbl(rp, "uptime_secs"));
            bool admin = false;
            rt_json_get_bool(rp, "caller_is_admin", &admin);
            bool um = false;
            rt_json_get_bool(rp, "user_mode", &um);
            printf("Daemon     resource-trackerd %s on %s%s\n", rt_json_get_string(rp, "version"),
                   rt_json_get_string(rp, "hostname"), um ? " (user mode)" : "");
            printf("Socket     %s\n", ctl->used_socket);
            printf("Uptime     %s, sampling every %.3gs\n", up, dbl(rp, "interval_secs"));
            printf("Jobs       %lld running\n", (long long)i64(rp, "jobs_running"));
            printf("GPUs       %lld\n", (long long)i64(rp, "gpus"));
            printf("You        %s%s\n", ctl_fmt_user(i64(rp, "caller_uid"), user, sizeof(user)),
                   admin ? " (administrator: all jobs)" : " (your jobs only)");
        }
    }
    json_object_put(reply);
    rt_vl_client_close(&c);
    return rc;
}
