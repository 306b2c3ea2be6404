/* resource-trackerctl run -- cmd args…: run a command as a tracked job.
 *
 * The command is forked here, in the caller's environment, terminal and
 * cgroup (the daemon never executes user commands), held on a pipe until the
 * daemon has registered it, then exec'd. Signals sent to us are forwarded;
 * when it exits we let the daemon take the final sample while it is still a
 * zombie, then reap it and exit with its status (128+N for signal N). */
#include "ctl.h"

#include "args.h"

#include "rt/json.h"
#include "rt/sample_csv.h"
#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define DRAIN_TIMEOUT_MS 5000

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

struct run {
    struct ctl *ctl;
    struct ctl_meta meta;
    bool csv, quiet;
    const char *output_path;
    FILE *out;
    bool out_broken;
    char **cmd;
    pid_t child;
    uint64_t job_id;
    struct rt_vl_client ctrl, stream;
    bool streaming;
};

static const char usage[] =
    "Usage: resource-trackerctl run [OPTIONS] [--] COMMAND [ARGS...]\n"
    "Run COMMAND as a tracked job; print a sample per interval to stderr; exit with\n"
    "COMMAND's exit status (128+N when killed by signal N). The options end at\n"
    "COMMAND, or at --.\n\n"
    "  -f, --format json|csv   sample format (default json); --json is --format json\n"
    "  -o, --output FILE       write samples to FILE, not stderr ($TRACKER_OUTPUT)\n"
    "  -q, --quiet             do not print samples ($TRACKER_QUIET=1)\n" CTL_META_USAGE
    "  -h, --help              this help\n\n"
    "Short options may be bundled (-qn NAME). Uploads to Sentinel when\n"
    "SENTINEL_API_TOKEN is set (SENTINEL_API_URL, TRACKER_UPLOAD_INTERVAL).\n"
    "Without a running daemon, a private one is started.\n";

static const struct ctl_opt run_opts[] = {
    {"output", 'o', "FILE", NULL, CTL_KIND_FILE},
    {"quiet", 'q', NULL, NULL, CTL_KIND_NONE},
    {NULL, 0, NULL, NULL, CTL_KIND_NONE},
};

const struct ctl_spec ctl_run_spec = {
    .verb = "run",
    .usage = usage,
    .opts = run_opts,
    .more = ctl_meta_opts,
    .formats = CTL_FMT_JSON | CTL_FMT_CSV,
    .in_order = true,
    .operand = CTL_KIND_COMMAND,
};

static int parse(struct run *r, int argc, char **argv)
{
    struct ctl_args a;
    bool quiet_set = false;
    ctl_args_init(&a, r->ctl, &ctl_run_spec);
    for (int o; (o = ctl_args_next(&a, argc, argv)) != CTL_ARGS_END;) {
        if (o == CTL_ARGS_STOP)
            return a.rc ? a.rc : -1;
        int m = ctl_meta_option(&r->meta, &a, o, optarg);
        if (m < 0)
            return RT_EXIT_USAGE;
        if (m > 0)
            continue;
        if (o == 'q')
            r->quiet = quiet_set = true;
        else if (o == 'o')
            r->output_path = optarg;
    }
    if (ctl_args_operands(&a, argc, argv, NULL, 1, INT_MAX))
        return RT_EXIT_USAGE;
    r->csv = r->ctl->format == CTL_FMT_CSV;
    r->cmd = &argv[optind];
    ctl_args_source("command", "COMMAND", NULL);
    ctl_meta_from_env(&r->meta);
    const char *v;
    if (!quiet_set && (v = getenv("TRACKER_QUIET")) && *v && ctl_parse_bool(v, &r->quiet) < 0) {
        CTL_ERR("TRACKER_QUIET '%s': a boolean is 1/0/true/false/yes/no/on/off, in any case", v);
        return RT_EXIT_USAGE;
    }
    if (!r->output_path && (v = getenv("TRACKER_OUTPUT")) && *v)
        r->output_path = v;
    return 0;
}

static struct json_object *start_params(struct run *r, int64_t starttime)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "pid", json_object_new_int64(r->child));
    json_object_object_add(p, "start_time", json_object_new_int64(starttime));
    if (r->meta.job_name)
        json_object_object_add(p, "name", json_object_new_string(r->meta.job_name));
    if (r->meta.interval > 0)
        json_object_object_add(p, "interval_secs", json_object_new_double(r->meta.interval));
    struct json_object *md = json_object_get(r->meta.metadata);
    struct json_object *cmd = json_object_new_array();
    for (char **a = r->cmd; *a; a++)
        json_object_array_add(cmd, json_object_new_string(*a));
    json_object_object_add(md, "command", cmd);
    json_object_object_add(p, "metadata", md);
    ctl_upload_params(p);
    return p;
}

/* The root's start time (clock ticks since boot) pins it against PID reuse. */
static int64_t starttime_of(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    ssize_t n = rt_read_file_at(AT_FDCWD, path, buf, sizeof(buf));
    const char *p = n > 0 ? strrchr(buf, ')') : NULL;
    if (!p)
        return -1;
    /* starttime is field 22; the field after ')' is number 3. */
    int field = 2;
    for (; *p && field < 22; p++)
        if (*p == ' ')
            field++;
    return field == 22 ? strtoll(p, NULL, 10) : -1;
}

static void emit(struct run *r, const char *text, size_t len)
{
    if (r->out_broken || !r->out)
        return;
    if (fwrite(text, 1, len, r->out) != len || fflush(r->out) != 0) {
        /* A closed pipe or full disk must not take the command down with us. */
        r->out_broken = true;
        CTL_ERR("cannot write samples (%s); the command keeps running", strerror(errno));
    }
}

/* Print one stream reply; false when the stream is over. */
static bool print_reply(struct run *r, struct json_object *reply)
{
    if (rt_vl_reply_error(reply)) {
        ctl_report_error(reply);
        return false;
    }
    struct json_object *p = rt_vl_reply_params(reply);
    const char *csv = rt_json_get_string(p, "csv");
    if (csv) {
        emit(r, csv, strlen(csv));
    } else {
        struct json_object *arr = rt_json_get_array(p, "samples");
        for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
            const char *s = rt_json_plain(json_object_array_get_idx(arr, i));
            emit(r, s, strlen(s));
            emit(r, "\n", 1);
        }
    }
    return rt_vl_reply_continues(reply);
}

/* Read what the stream has; false when it ended or broke. */
static bool pump_stream(struct run *r, int timeout_ms)
{
    for (;;) {
        struct json_object *reply = NULL;
        int e = rt_vl_client_recv(&r->stream, &reply, timeout_ms);
        if (e == -ETIMEDOUT || e == -EINTR)
            return true;
        if (e < 0) {
            CTL_ERR("lost the sample stream from the daemon: %s", strerror(-e));
            return false;
        }
        bool more = print_reply(r, reply);
        json_object_put(reply);
        if (!more)
            return false;
        timeout_ms = 0; /* take whatever else is buffered, without waiting */
    }
}

static int finish(struct run *r, const siginfo_t *si)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "id", rt_json_u64(r->job_id));
    if (si->si_code == CLD_EXITED)
        json_object_object_add(p, "exit_code", json_object_new_int64(si->si_status));
    else
        json_object_object_add(p, "signal", json_object_new_int64(si->si_status));
    struct json_object *reply;
    int e = ctl_call(&r->ctrl, RT_VL_INTERFACE ".FinishJob", p, &reply, NULL);
    json_object_put(reply);
    return e;
}

int ctl_run(struct ctl *ctl, int argc, char **argv)
{
    struct run r = {.ctl = ctl, .child = -1, .ctrl = {.fd = -1}, .stream = {.fd = -1}};
    ctl_meta_init(&r.meta);
    int rc = parse(&r, argc, argv);
    if (rc) {
        ctl_meta_free(&r.meta);
        return rc < 0 ? 0 : rc;
    }
    signal(SIGPIPE, SIG_IGN);
    if (!r.quiet) {
        if (r.output_path) {
            r.out = fopen(r.output_path, "w");
            if (!r.out) {
                CTL_ERR("cannot open output file %s: %s", r.output_path, strerror(errno));
                ctl_meta_free(&r.meta);
                return RT_EXIT_FAILURE;
            }
        } else {
            r.out = stderr;
        }
    }
    rc = ctl_connect(ctl, &r.ctrl, true);
    if (rc)
        goto out;

    sigset_t mask, old;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    for (size_t i = 0; i < RT_ARRAY_SIZE(forwarded); i++)
        sigaddset(&mask, forwarded[i]);
    sigprocmask(SIG_BLOCK, &mask, &old);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    int go[2], execerr[2];
    if (sfd < 0 || pipe2(go, O_CLOEXEC) < 0 || pipe2(execerr, O_CLOEXEC) < 0) {
        CTL_ERR("cannot set up the command: %s", strerror(errno));
        rc = RT_EXIT_FAILURE;
        goto out;
    }
    r.child = fork();
    if (r.child < 0) {
        CTL_ERR("fork: %s", strerror(errno));
        rc = RT_EXIT_FAILURE;
        goto out;
    }
    if (r.child == 0) {
        /* Wait for the go: the job is registered before the command runs. */
        sigprocmask(SIG_SETMASK, &old, NULL);
        signal(SIGPIPE, SIG_DFL);
        close(go[1]);
        close(execerr[0]);
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(127);
        execvp(r.cmd[0], r.cmd);
        int e = errno;
        if (write(execerr[1], &e, sizeof(e)) < 0)
            _exit(127);
        _exit(e == ENOENT ? 127 : 126);
    }
    close(go[0]);
    close(execerr[1]);

    struct json_object *reply, *params;
    rc = ctl_call(&r.ctrl, RT_VL_INTERFACE ".StartJob", start_params(&r, starttime_of(r.child)), &reply,
                  &params);
    if (rc) {
        kill(r.child, SIGKILL);
        waitpid(r.child, NULL, 0);
        goto out;
    }
    int64_t id = 0;
    rt_json_get_i64(rt_json_get_object(params, "job"), "id", &id);
    r.job_id = (uint64_t)id;
    json_object_put(reply);

    if (r.out) {
        struct ctl sctl = *ctl;
        sctl.socket = ctl->used_socket;
        if (ctl_connect(&sctl, &r.stream, false) == 0) {
            struct json_object *p = json_object_new_object();
            json_object_object_add(p, "id", rt_json_u64(r.job_id));
            json_object_object_add(p, "format", json_object_new_string(r.csv ? "csv" : "json"));
            json_object_object_add(p, "follow", json_object_new_boolean(1));
            r.streaming = rt_vl_client_send(&r.stream, RT_VL_INTERFACE ".GetJobSamples", p, RT_VL_MORE) == 0;
        }
    }
    if (write(go[1], "x", 1) != 1)
        CTL_ERR("cannot release the command: %s", strerror(errno));
    close(go[1]);

    int exec_errno = 0;
    bool exec_known = false;
    siginfo_t si = {0};
    for (;;) {
        struct pollfd pfd[3] = {
            {.fd = sfd, .events = POLLIN},
            {.fd = exec_known ? -1 : execerr[0], .events = POLLIN},
            {.fd = r.streaming ? r.stream.fd : -1, .events = POLLIN},
        };
        if (poll(pfd, 3, -1) < 0 && errno != EINTR)
            break;
        if (pfd[1].revents) {
            ssize_t n = read(execerr[0], &exec_errno, sizeof(exec_errno));
            exec_known = true;
            if (n == sizeof(exec_errno))
                CTL_ERR("cannot run %s: %s", r.cmd[0], strerror(exec_errno));
            else
                exec_errno = 0;
        }
        if (pfd[2].revents)
            r.streaming = pump_stream(&r, 0);
        if (pfd[0].revents) {
            struct signalfd_siginfo fi;
            while (read(sfd, &fi, sizeof(fi)) == sizeof(fi)) {
                /* Terminal signals (SI_KERNEL) reached the command through
                 * the process group already; forward only those sent to us. */
                if (fi.ssi_signo != SIGCHLD && (int)fi.ssi_code <= 0)
                    kill(r.child, (int)fi.ssi_signo);
            }
            si.si_pid = 0;
            if (waitid(P_PID, (id_t)r.child, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == r.child)
                break;
        }
    }
    /* The command ended but is not reaped: the daemon still sees the zombie. */
    int frc = finish(&r, &si);
    if (frc)
        CTL_ERR("the final sample may be missing");
    int status = 0;
    waitpid(r.child, &status, 0);
    /* The daemon ends the stream after the final sample. */
    uint64_t deadline = rt_mono_ns() + (uint64_t)DRAIN_TIMEOUT_MS * 1000000;
    while (r.streaming) {
        uint64_t now = rt_mono_ns();
        if (now >= deadline) {
            CTL_ERR("the daemon did not end the sample stream");
            break;
        }
        r.streaming = pump_stream(&r, (int)((deadline - now) / 1000000) + 1);
    }
    if (exec_errno)
        rc = exec_errno == ENOENT ? 127 : 126;
    else if (WIFSIGNALED(status))
        rc = 128 + WTERMSIG(status);
    else
        rc = WEXITSTATUS(status);
    close(execerr[0]);
    close(sfd);
out:
    rt_vl_client_close(&r.ctrl);
    rt_vl_client_close(&r.stream);
    if (r.out && r.out != stderr)
        fclose(r.out);
    ctl_meta_free(&r.meta);
    return rc;
}
