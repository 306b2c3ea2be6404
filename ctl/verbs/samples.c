/* samples: a job's samples as JSON Lines or CSV, --follow until it ends. */
#include "verbs/verbs.h"

#include "rt/sample_csv.h"
#include "rt/util.h"

#include <errno.h>
#include <string.h>

enum { FOLLOW = 'F', OFFSET = CTL_OPT_LONG };

static const char usage[] =
    "Usage: resource-trackerctl samples [OPTIONS] JOB\n"
    "Print JOB's samples on stdout as JSON Lines or CSV (with its header, also from\n"
    "an offset).\n\n"
    "  -f, --format json|csv   sample format (default json); --json is --format json\n"
    "  -F, --follow            wait for new samples until the job ends\n"
    "  --offset N              skip the first N samples\n"
    CTL_USER_USAGE
    "  -h, --help              this help\n";

static const struct ctl_opt opts[] = {
    {"follow", FOLLOW, NULL, NULL, CTL_KIND_NONE},
    {"offset", OFFSET, "N", "an offset is a whole number of samples, 0 or more", CTL_KIND_NONE},
    {NULL, 0, NULL, NULL, CTL_KIND_NONE},
};

const struct ctl_spec ctl_samples_spec = {
    .verb = "samples",
    .usage = usage,
    .opts = opts,
    .more = ctl_user_opts,
    .formats = CTL_FMT_JSON | CTL_FMT_CSV,
    .operand = CTL_KIND_JOB,
};

int ctl_samples(struct ctl *ctl, int argc, char **argv)
{
    const char *job;
    bool follow = false;
    uint64_t offset = 0;
    struct ctl_args a;
    ctl_args_init(&a, ctl, &ctl_samples_spec);
    for (int o; (o = ctl_args_next(&a, argc, argv)) != CTL_ARGS_END;) {
        if (o == CTL_ARGS_STOP)
            return a.rc;
        if (o == FOLLOW)
            follow = true;
        else if (o == CTL_OPT_USER)
            ctl->user = optarg;
        else if (o == OFFSET && (!rt_parse_u64(optarg, &offset) || offset > INT64_MAX))
            return ctl_args_invalid(&a, o, optarg);
    }
    int rc = ctl_args_operands(&a, argc, argv, &job, 1, 1);
    if (rc)
        return rc;
    const char *format = ctl->format == CTL_FMT_CSV ? "csv" : "json";
    struct json_object *p = json_object_new_object();
    rc = ctl_job_ref(ctl, p, job);
    struct rt_vl_client c = {.fd = -1};
    if (rc || (rc = ctl_connect(ctl, &c))) {
        json_object_put(p);
        return rc;
    }
    json_object_object_add(p, "offset", json_object_new_int64((int64_t)offset));
    json_object_object_add(p, "format", json_object_new_string(format));
    if (follow)
        json_object_object_add(p, "follow", json_object_new_boolean(1));
    /* The daemon heads only offset 0 with the header; our output always has one. */
    if (strcmp(format, "csv") == 0 && offset > 0)
        printf("%s\n", RT_CSV_HEADER);
    if (rt_vl_client_send(&c, M("GetJobSamples"), p, RT_VL_MORE) < 0) {
        CTL_ERR("lost the connection to the daemon");
        rt_vl_client_close(&c);
        return RT_EXIT_UNREACHABLE;
    }
    for (;;) {
        struct json_object *reply = NULL;
        int e = rt_vl_client_recv(&c, &reply, -1);
        if (e < 0) {
            CTL_ERR("lost the connection to the daemon: %s", strerror(-e));
            rc = RT_EXIT_UNREACHABLE;
            break;
        }
        if (rt_vl_reply_error(reply)) {
            rc = ctl_report_error(reply);
            json_object_put(reply);
            break;
        }
        struct json_object *rp = rt_vl_reply_params(reply);
        const char *csv = rt_json_get_string(rp, "csv");
        if (csv) {
            fputs(csv, stdout);
        } else {
            struct json_object *arr = rt_json_get_array(rp, "samples");
            for (size_t i = 0; arr && i < json_object_array_length(arr); i++)
                printf("%s\n", rt_json_plain(json_object_array_get_idx(arr, i)));
        }
        fflush(stdout);
        bool more = rt_vl_reply_continues(reply);
        json_object_put(reply);
        if (!more)
            break;
    }
    rt_vl_client_close(&c);
    return rc;
}
