/* start and stop: tracking a process tree, a cgroup or a container that
 * runs already. */
#include "verbs/verbs.h"

#include <sys/syscall.h>
#include <unistd.h>

static const char start_usage[] =
    "Usage: resource-trackerctl start [OPTIONS] --pid PID | --cgroup PATH | --unit NAME | --container ID\n"
    "Track what runs already as a job; print its id: the process tree of a process\n"
    "you own, or a cgroup (its processes, however they started), a systemd unit's or\n"
    "a docker or podman container's. A cgroup job ends when its cgroup empties.\n\n"
    "  -p, --pid PID           the tree's root process\n"
    "  --cgroup PATH           a cgroup: a path in the cgroup tree (/system.slice/x.scope)\n"
    "                          or under its mount (/sys/fs/cgroup/...)\n"
    "  --unit NAME             a running systemd unit (nginx.service, x.scope)\n"
    "  --container ID          a running container: its id, a unique prefix of 12 or\n"
    "                          more hex digits, or its name\n"
    "  --name NAME             the job's name, as --job-name\n" CTL_META_USAGE
    "  -f, --format FORMAT     text (the job's id) or json; --json is --format json\n"
    "  -h, --help              this help\n";

static const struct ctl_opt start_opts[] = {
    {"pid", 'p', "PID", CTL_RULE_PID, CTL_KIND_PID},
    {"name", CTL_OPT_LONG + 1, "NAME", CTL_RULE_NAME, CTL_KIND_NONE},
    {"cgroup", CTL_OPT_LONG + 2, "PATH", "an absolute cgroup path", CTL_KIND_NONE},
    {"container", CTL_OPT_LONG + 3, "ID", "a container id, its prefix or name", CTL_KIND_NONE},
    {"unit", CTL_OPT_LONG + 4, "NAME", "a systemd unit's name", CTL_KIND_NONE},
    {NULL, 0, NULL, NULL, CTL_KIND_NONE},
};

const struct ctl_spec ctl_start_spec = {
    .verb = "start",
    .usage = start_usage,
    .opts = start_opts,
    .more = ctl_meta_opts,
    .formats = CTL_FMT_TEXT | CTL_FMT_JSON,
};

int ctl_start(struct ctl *ctl, int argc, char **argv)
{
    struct ctl_meta meta;
    ctl_meta_init(&meta);
    int64_t pid = 0;
    const char *cgroup = NULL, *container = NULL, *unit = NULL;
    int rc = RT_EXIT_USAGE;
    struct ctl_args a;
    ctl_args_init(&a, ctl, &ctl_start_spec);
    for (int o; (o = ctl_args_next(&a, argc, argv)) != CTL_ARGS_END;) {
        if (o == CTL_ARGS_STOP) {
            rc = a.rc;
            goto out;
        }
        int m = ctl_meta_option(&meta, &a, o, optarg);
        if (m < 0)
            goto out;
        if (m > 0)
            continue;
        if (o == 'p' && !ctl_parse_pid(optarg, &pid)) {
            ctl_args_invalid(&a, o, optarg);
            goto out;

        } else if (o == CTL_OPT_LONG + 1) {
            ctl_meta_name(&meta, optarg, "--name");
        } else if (o == CTL_OPT_LONG + 2 && optarg[0] != '/') {
            ctl_args_invalid(&a, o, optarg);
            goto out;
        } else if (o == CTL_OPT_LONG + 2) {
            cgroup = optarg;
        } else if (o == CTL_OPT_LONG + 3) {
            container = optarg;
        } else if (o == CTL_OPT_LONG + 4) {
            unit = optarg;
        }
    }
    if (ctl_args_operands(&a, argc, argv, NULL, 0, 0))
        goto out;
    if ((pid != 0) + (cgroup != NULL) + (container != NULL) + (unit != NULL) != 1) {
        ctl_args_error(&a, "needs one of --pid PID, --cgroup PATH, --unit NAME, --container ID: what to track");
        goto out;
    }
    if (ctl_meta_from_env(&meta) < 0 || ctl_meta_check(&meta, &a, false))
        goto out;
    if (pid == 1) {
        ctl_args_error(&a, "--pid 1: PID 1 is init, whose tree is every process: the host, which "
                           "'resource-trackerctl status' shows");
        goto out;
    }
    struct json_object *p = json_object_new_object();
    if (pid)
        json_object_object_add(p, "pid", json_object_new_int64(pid));
    else if (cgroup)
        json_object_object_add(p, "cgroup", json_object_new_string(cgroup));
    else if (unit)
        json_object_object_add(p, "unit", json_object_new_string(unit));
    else
        json_object_object_add(p, "container", json_object_new_string(container));
    if (meta.job_name)
        json_object_object_add(p, "name", json_object_new_string(meta.job_name));
    if (meta.interval > 0)
        json_object_object_add(p, "interval_secs", json_object_new_double(meta.interval));
    json_object_object_add(p, "metadata", json_object_get(meta.metadata));
    ctl_meta_request_params(&meta, p);
    ctl_upload_params(p);
    /* The process, pinned now: the daemon then tracks this one even if it
     * ends and its PID is reused before the call arrives. Without pidfds
     * (kernel < 5.3, seccomp) the daemon goes by the PID. */
    int pidfd = pid ? (int)syscall(SYS_pidfd_open, (pid_t)pid, 0) : -1;
    if (pidfd >= 0)
        json_object_object_add(p, "pidfd", json_object_new_int(0));
    struct rt_vl_client c = {.fd = -1};
    struct json_object *reply = NULL, *rp;
    rc = ctl_connect(ctl, &c);
    if (rc)
        json_object_put(p);
    else
        rc = ctl_call_fd(&c, M("StartJob"), p, pidfd, &reply, &rp);
    if (pidfd >= 0)
        close(pidfd);
    if (!rc) {
        struct json_object *job = rt_json_get_object(rp, "job");
        if (ctl->json)
            ctl_print_json(stdout, job);
        else
            printf("%lld\n", (long long)i64(job, "id"));
    }
    json_object_put(reply);
    rt_vl_client_close(&c);
out:
    ctl_meta_free(&meta);
    return rc;
}

static void print_summary_line(struct json_object *job)
{
    struct json_object *s = rt_json_get_object(job, "summary");
    char dur[32], mem[32];
    ctl_fmt_duration(dur, sizeof(dur), dbl(s, "duration_secs"));
    ctl_fmt_bytes(mem, sizeof(mem), ctl_total0(s, "memory_peak_bytes"));
    printf("job %lld %s after %s: %.2f CPU seconds, memory peak %s\n", (long long)i64(job, "id"),
           rt_json_get_string(job, "state"), dur, ctl_total0(s, "cpu_secs"), mem);
}

static const char stop_usage[] =
    "Usage: resource-trackerctl stop [--json] [--user USER] JOB\n"
    "Stop tracking JOB (an id, or a name among your jobs: the running one); its\n"
    "processes keep running.\n\n"
    "  -f, --format FORMAT     text (a summary line) or json; --json is --format json\n"
    CTL_USER_USAGE
    "  -h, --help              this help\n";

const struct ctl_spec ctl_stop_spec = {
    .verb = "stop",
    .usage = stop_usage,
    .more = ctl_user_opts,
    .formats = CTL_FMT_TEXT | CTL_FMT_JSON,
    .operand = CTL_KIND_RUNNING,
};

int ctl_stop(struct ctl *ctl, int argc, char **argv)
{
    const char *job;
    int rc = ctl_args_simple(ctl, &ctl_stop_spec, argc, argv, &job, 1, 1);
    if (rc)
        return rc < 0 ? 0 : rc;
    struct json_object *p = json_object_new_object();
    if ((rc = ctl_job_ref(ctl, p, job))) {
        json_object_put(p);
        return rc;
    }
    struct rt_vl_client c = {.fd = -1};
    struct json_object *reply = NULL, *rp;
    rc = ctl_simple_call(ctl, M("StopJob"), p, &c, &reply, &rp);
    if (!rc) {
        if (ctl->json)
            ctl_print_json(stdout, rt_json_get_object(rp, "job"));
        else
            print_summary_line(rt_json_get_object(rp, "job"));
    }
    json_object_put(reply);
    rt_vl_client_close(&c);
    return rc;
}
