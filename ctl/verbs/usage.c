/* usage: GPU-hours held, busy and idle but held, CPU core-hours, memory
 * GiB-hours and energy per user, job name or job, covering every GPU
 * process, tracked or not (GetUsage). */
#include "verbs/verbs.h"

#include "rt/util.h"

#include <stdlib.h>
#include <string.h>

enum { BY = 'b', SINCE = 's', USER = 'u' };

static const char usage_text[] =
    "Usage: resource-trackerctl usage [--by user|name|job] [--since TIME] [--user USER] [--json]\n"
    "What the jobs and the GPU processes in no job used: GPU-hours held, busy and idle but\n"
    "held, CPU core-hours, memory GiB-hours and GPU energy. Jobs count whole when they\n"
    "started since TIME (as jobs --since); processes in no job by the hour. Yours; an\n"
    "administrator sees everyone's.\n\n"
    "  -b, --by WHAT           user (default), name (job name) or job\n"
    "  -s, --since TIME        a date/time (2026-01-31, \"2026-01-31 14:00\", 14:00, today,\n"
    "                          yesterday, @UNIX-SECONDS) or a duration ago (90s, 30m, 2h,\n"
    "                          7d, 1w); default: all that is kept\n"
    "  -u, --user USER         USER's only, a name or a uid (yours; an administrator: anyone's)\n"
    "  -f, --format FORMAT     text (a table) or json; --json is --format json\n"
    "  -h, --help              this help\n";

static const struct ctl_opt opts[] = {
    {"by", BY, "WHAT", "WHAT is user, name or job", CTL_KIND_NONE},
    {"since", SINCE, "TIME", CTL_RULE_SINCE, CTL_KIND_NONE},
    {"user", USER, "USER", "a USER is a user name or a numeric uid", CTL_KIND_USER},
    {NULL, 0, NULL, NULL, CTL_KIND_NONE},
};

const struct ctl_spec ctl_usage_spec = {
    .verb = "usage",
    .usage = usage_text,
    .opts = opts,
    .formats = CTL_FMT_TEXT | CTL_FMT_JSON,
};

static void print_table(struct json_object *rows, const char *by)
{
    bool jobs = strcmp(by, "job") == 0, names = strcmp(by, "name") == 0;
    printf("%-16s %-24s %10s %10s %10s %12s %12s %12s\n", "USER", jobs ? "JOB" : names ? "NAME" : "JOBS",
           "GPU-H HELD", "GPU-H BUSY", "GPU-H IDLE", "CORE-HOURS", "MEM GIB-H", "ENERGY KWH");
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        struct json_object *r = json_object_array_get_idx(rows, i);
        char user[64], userc[64], what[160], whatc[160];
        ctl_fmt_cell(userc, sizeof(userc), ctl_fmt_user(i64(r, "uid"), user, sizeof(user)), 16);
        bool untracked = false;
        rt_json_get_bool(r, "untracked", &untracked);
        const char *name = rt_json_get_string(r, "name");
        int64_t id;
        if (untracked)
            snprintf(what, sizeof(what), "(in no job)");
        else if (jobs && rt_json_get_i64(r, "job_id", &id))
            snprintf(what, sizeof(what), "%lld%s%s", (long long)id, name ? " " : "", name ? name : "");
        else if (names)
            snprintf(what, sizeof(what), "%s", name ? name : "(unnamed)");
        else
            snprintf(what, sizeof(what), "%lld", (long long)i64(r, "jobs"));
        ctl_fmt_cell(whatc, sizeof(whatc), what, 24);
        printf("%s %s %10.2f %10.2f %10.2f %12.2f %12.2f %12.3f\n", userc, whatc, dbl(r, "gpu_held_secs") / 3600,
               dbl(r, "gpu_busy_secs") / 3600, dbl(r, "gpu_idle_secs") / 3600, dbl(r, "cpu_secs") / 3600,
               dbl(r, "memory_byte_secs") / (3600.0 * (1 << 30)), dbl(r, "energy_joules") / 3.6e6);
    }
}

int ctl_usage_report(struct ctl *ctl, int argc, char **argv)
{
    struct json_object *p = json_object_new_object();
    const char *by = "user";
    struct ctl_args a;
    ctl_args_init(&a, ctl, &ctl_usage_spec);
    for (int o; (o = ctl_args_next(&a, argc, argv)) != CTL_ARGS_END;) {
        double since;
        int64_t uid;
        bool ok = true;
        switch (o) {
        case CTL_ARGS_STOP:
            json_object_put(p);
            return a.rc;
        case BY:
            if ((ok = !strcmp(optarg, "user") || !strcmp(optarg, "name") || !strcmp(optarg, "job")))
                by = optarg;
            break;
        case SINCE:
            if ((ok = ctl_parse_since(optarg, (double)rt_real_ns() / 1e9, &since)))
                json_object_object_add(p, "since", json_object_new_double(since));
            break;
        case USER:
            if ((ok = ctl_parse_user(optarg, &uid)))
                json_object_object_add(p, "owner_uid", json_object_new_int64(uid));
            break;
        }
        if (!ok) {
            json_object_put(p);
            return ctl_args_invalid(&a, o, optarg);
        }
    }
    if (ctl_args_operands(&a, argc, argv, NULL, 0, 0)) {
        json_object_put(p);
        return RT_EXIT_USAGE;
    }
    json_object_object_add(p, "by", json_object_new_string(by));
    struct rt_vl_client c = {.fd = -1};
    struct json_object *reply = NULL, *rp;
    int rc = ctl_simple_call(ctl, M("GetUsage"), p, &c, &reply, &rp);
    if (!rc) {
        if (ctl->json) {
            ctl_print_json(stdout, rp);
        } else {
            print_table(rt_json_get_array(rp, "rows"), by);
            bool truncated = false;
            if (rt_json_get_bool(rp, "truncated", &truncated) && truncated)
                printf("(the first 10000 rows only: narrow it with --since or --user)\n");
        }
    }
    json_object_put(reply);
    rt_vl_client_close(&c);
    return rc;
}
