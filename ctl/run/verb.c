/* resource-trackerctl run -- cmd args…: run a command as a tracked job.
 *
 * The command is forked here, in the caller's environment, terminal and
 * cgroup (the daemon never executes user commands), held on a pipe until the
 * daemon has registered it, then exec'd (run/child.c). Samples stream from
 * the daemon, which may restart meanwhile (run/link.c). When the command
 * exits, the daemon takes the final sample while it is still a zombie; then
 * it is reaped, a summary printed, and we exit with its status (128+N for
 * signal N). */
#include "ctl.h"
#include "run/run.h"

#include "args.h"
#include "insight/insight.h"

#include "rt/json.h"
#include "rt/paths.h"
#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct run {
    struct ctl *ctl;
    struct ctl_meta meta;
    bool csv, quiet, summary_only;
    const char *output_path;
    unsigned gpus;                /* --gpus N, 0 when not asked */
    FILE *out;
    bool out_broken;
    char **cmd;
};

static const char usage[] =
    "Usage: resource-trackerctl run [OPTIONS] [--] COMMAND [ARGS...]\n"
    "Run COMMAND as a tracked job and exit with its exit status (128+N when killed\n"
    "by signal N). At a terminal, COMMAND's output is left alone and a summary of\n"
    "the job follows it; for scripts (standard error not a terminal, or --format or\n"
    "--output given) a sample per interval goes to stderr first, as the Rust\n"
    "resource-tracker prints them. Processes COMMAND leaves behind stay in the job;\n"
    "a daemon restart does not interrupt it. The options end at COMMAND, or at --.\n\n"
    "  -f, --format json|csv   print samples in this format (default json); --json is\n"
    "                          --format json\n"
    "  -o, --output FILE       write samples to FILE ($TRACKER_OUTPUT)\n"
    "  -s, --summary           print the summary alone, no samples (at a terminal:\n"
    "                          the default)\n"
    "  -q, --quiet             print neither samples nor the summary ($TRACKER_QUIET=1)\n"
    "  -g, --gpus N            give COMMAND the N least busy GPUs (free ones first):\n"
    "                          CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES and\n"
    "                          ROCR_VISIBLE_DEVICES name them; warn: lines say when\n"
    "                          fewer are free, and when one stays unused\n" CTL_META_USAGE
    "  -h, --help              this help\n\n"
    "Short options may be bundled (-qn NAME). Uploads to Sentinel when\n"
    "SENTINEL_API_TOKEN is set (SENTINEL_API_URL, TRACKER_UPLOAD_INTERVAL); upload\n"
    "problems are printed as warn: lines.\n"
    "Without a running daemon, a private one is started.\n";

static const struct ctl_opt run_opts[] = {
    {"output", 'o', "FILE", NULL, CTL_KIND_FILE},
    {"quiet", 'q', NULL, NULL, CTL_KIND_NONE},
    {"gpus", 'g', "N", "a number of GPUs is a whole number from 1 to 64", CTL_KIND_NONE},
    {"summary", 's', NULL, NULL, CTL_KIND_NONE},
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
        int64_t n;
        if (o == 'q')
            r->quiet = quiet_set = true;
        else if (o == 's')
            r->summary_only = true;
        else if (o == 'o')
            r->output_path = optarg;
        else if (o == 'g' && (!ctl_parse_count(optarg, &n) || n > 64))
            return ctl_args_invalid(&a, o, optarg);
        else if (o == 'g')
            r->gpus = (unsigned)n;
    }
    if (ctl_args_operands(&a, argc, argv, NULL, 1, INT_MAX))
        return RT_EXIT_USAGE;
    if (r->summary_only && (quiet_set || r->output_path || r->ctl->format_chosen))
        return ctl_args_error(&a, "--summary prints no samples: it goes with none of %s",
                              quiet_set ? "--quiet" : r->output_path ? "--output" : "--format and --json");
    r->csv = r->ctl->format == CTL_FMT_CSV;
    r->cmd = &argv[optind];
    ctl_args_source("command", "COMMAND", NULL);
    if (ctl_meta_from_env(&r->meta) < 0)
        return RT_EXIT_USAGE;
    ctl_meta_check(&r->meta, &a, true); /* a label never stops the command */
    const char *v;
    if (!quiet_set && !r->summary_only && (v = getenv("TRACKER_QUIET")) && *v && ctl_parse_bool(v, &r->quiet) < 0) {
        CTL_ERR("TRACKER_QUIET '%s': a boolean is 1/0/true/false/yes/no/on/off, in any case", v);
        return RT_EXIT_USAGE;
    }
    if (!r->output_path && !r->summary_only && (v = getenv("TRACKER_OUTPUT")) && *v)
        r->output_path = v;
    /* A person at a terminal reads their command's output, not ours: samples
     * are for scripts, which ask for them or read a pipe (docs/usage.md). */
    if (!r->output_path && !r->ctl->format_chosen && isatty(STDERR_FILENO))
        r->summary_only = true;
    return 0;
}

static struct json_object *start_params(struct run *r, pid_t pid, int64_t starttime)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "pid", json_object_new_int64(pid));
    /* We are the command's parent and its orphans' subreaper (run/child.c);
     * it waits, held, for the daemon to put it in a cgroup of its own. */
    json_object_object_add(p, "adopt_orphans", json_object_new_boolean(1));
    json_object_object_add(p, "own_cgroup", json_object_new_boolean(1));
    json_object_object_add(p, "start_time", json_object_new_int64(starttime));
    if (r->meta.job_name)
        json_object_object_add(p, "name", json_object_new_string(r->meta.job_name));
    if (r->meta.interval > 0)
        json_object_object_add(p, "interval_secs", json_object_new_double(r->meta.interval));
    if (r->gpus)
        json_object_object_add(p, "gpus", json_object_new_int64(r->gpus));
    struct json_object *md = json_object_get(r->meta.metadata);
    struct json_object *cmd = json_object_new_array();
    for (char **a = r->cmd; *a; a++)
        json_object_array_add(cmd, json_object_new_string(*a));
    json_object_object_add(md, "command", cmd);
    json_object_object_add(p, "metadata", md);
    ctl_meta_request_params(&r->meta, p);
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

/* --output FILE, as root, may name a directory another user can write: a
 * link they planted there must not redirect the samples (onto /etc/shadow),
 * nor a FIFO of theirs hold the command back. The last component is
 * followed only when it is a link of ours or root's in a directory nobody
 * else may change (/dev/stdout); a FIFO or device is opened without
 * blocking, and only a regular file is truncated. NULL with errno. */
static FILE *open_output(const char *path)
{
    const char *base = rt_path_base(path);
    int dir = rt_open_parent(path);
    if (dir < 0) {
        errno = -dir;
        return NULL;
    }
    struct stat ds, ls;
    int flags = O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC;
    bool safe_dir = fstat(dir, &ds) == 0 && (ds.st_uid == 0 || ds.st_uid == geteuid()) &&
                    (!(ds.st_mode & 0022) || (ds.st_mode & S_ISVTX));
    bool safe_link = fstatat(dir, base, &ls, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(ls.st_mode) && safe_dir &&
                     (ls.st_uid == 0 || ls.st_uid == geteuid());
    int fd = openat(dir, base, flags | (safe_link ? 0 : O_NOFOLLOW), 0666);
    int e = errno;
    close(dir);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || (S_ISREG(st.st_mode) && ftruncate(fd, 0) < 0) ||
                    fcntl(fd, F_SETFL, O_WRONLY) < 0)) {
        e = errno;
        close(fd);
        fd = -1;
    }
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f && fd >= 0)
        close(fd);
    errno = e;
    return f;
}

static void emit(void *ctx, const char *text, size_t len)
{
    struct run *r = ctx;
    if (r->out_broken || !r->out)
        return;
    if (fwrite(text, 1, len, r->out) != len || fflush(r->out) != 0) {
        /* A closed pipe or full disk must not take the command down with us. */
        r->out_broken = true;
        CTL_ERR("cannot write samples (%s); the command keeps running", strerror(errno));
    }
}

/* The job could not be registered (no daemon answers or can be started, a
 * limit, a refusal): the command still runs, whatever the daemon says —
 * nobody may keep a user from running it. One line says why (the last
 * message held, run_untracked stops holding). */
static int run_untracked(struct run *r)
{
    const char *why = ctl_err_take_last();
    ctl_err_hold(false);
    CTL_ERR("warn: %s; running %s untracked", *why ? why : "no daemon can be reached or started", r->cmd[0]);
    struct run_child ch;
    int e = run_child_spawn(&ch, r->cmd);
    if (e < 0) {
        CTL_ERR("cannot set up the command: %s", strerror(-e));
        run_child_close(&ch);
        return RT_EXIT_FAILURE;
    }
    run_child_release(&ch, NULL, 0);
    siginfo_t si;
    for (;;) {
        struct pollfd pfd = {.fd = ch.sfd, .events = POLLIN};
        if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
            break;
        if (pfd.revents && run_child_signals(&ch, &si))
            break;
    }
    run_child_exec_result(&ch, r->cmd[0]);
    int rc = run_child_reap(&ch);
    run_child_close(&ch);
    return rc;
}

/* Until the command ends: its signals, the daemon's samples, reconnects. */
static void supervise(struct run_child *ch, struct run_link *l, siginfo_t *si)
{
    for (;;) {
        struct pollfd pfd[3] = {{.fd = ch->sfd, .events = POLLIN}};
        run_link_poll_fds(l, &pfd[1]);
        if (poll(pfd, 3, run_link_timeout_ms(l)) < 0 && errno != EINTR)
            return;
        run_link_service(l, &pfd[1]);
        if (pfd[0].revents && run_child_signals(ch, si))
            return;
    }
}

int ctl_run(struct ctl *ctl, int argc, char **argv)
{
    struct run r = {.ctl = ctl};
    ctl_meta_init(&r.meta);
    int rc = parse(&r, argc, argv);
    if (rc) {
        ctl_meta_free(&r.meta);
        return rc < 0 ? 0 : rc;
    }
    signal(SIGPIPE, SIG_IGN);
    if (!r.quiet && !r.summary_only) {
        if (r.output_path) {
            r.out = open_output(r.output_path);
            if (!r.out) {
                CTL_ERR("cannot open output file %s: %s", r.output_path,
                        errno == ELOOP ? "a symbolic link another user could have put there is not followed"
                                       : strerror(errno));
                ctl_meta_free(&r.meta);
                return RT_EXIT_FAILURE;
            }
        } else {
            r.out = stderr;
        }
    }
    struct rt_vl_client ctrl = {.fd = -1};
    ctl_err_hold(true);
    rc = ctl_connect(ctl, &ctrl);
    if (rc) {
        rc = run_untracked(&r);
        goto out;
    }
    struct run_link l;
    run_link_init(&l, ctl, &ctrl);
    l.want_samples = r.out != NULL;
    l.csv = r.csv;
    l.emit = emit;
    l.emit_ctx = &r;
    struct run_child ch;
    int e = run_child_spawn(&ch, r.cmd);
    if (e < 0) {
        CTL_ERR("cannot set up the command: %s", strerror(-e));
        rc = RT_EXIT_FAILURE;
        goto close;
    }
    rc = run_link_start(&l, start_params(&r, ch.pid, starttime_of(ch.pid)));
    if (rc) {
        run_child_abort(&ch); /* held: it has not run */
        /* A value of run's command line or TRACKER_* the daemon refuses is a
         * usage error (exit 2, nothing runs); whatever else, the command runs. */
        if (rc == RT_EXIT_USAGE)
            ctl_err_hold(false);
        else
            rc = run_untracked(&r);
        goto close;
    }
    ctl_err_hold(false);
    char env[4096];
    size_t env_len = r.gpus ? run_gpus_env(l.given_gpus, r.gpus, env, sizeof(env)) : 0;
    run_child_release(&ch, env, env_len);
    run_link_follow(&l);
    siginfo_t si = {0};
    supervise(&ch, &l, &si);
    /* The command ended but is not reaped: the daemon still sees the zombie. */
    run_child_exec_result(&ch, r.cmd[0]);
    int frc = run_link_finish(&l, &si, ch.sfd, ch.max_rss_bytes, ch.exec_errno != 0);
    rc = run_child_reap(&ch);
    if (frc == 0)
        run_link_drain(&l);
    else if (!l.gone)
        CTL_ERR("the final sample may be missing");
    run_child_note_orphans();
    if (!r.quiet && l.job) {
        ctl_print_job_summary(stderr, l.job);
        /* What to ask for next time: recommend's rules over this run and
         * the last 5 of its name, from their summaries (a few ms). */
        char next[512];
        bool started = !ch.exec_errno; /* a command that never ran: nothing to size */
        if (started && l.up && ctl_insight_recommend_line(&l.ctrl, l.job, 5, next, sizeof(next)) == 0)
            fprintf(stderr, "  Next run %s\n", next);
    }
close:
    run_child_close(&ch);
    run_link_close(&l);
out:
    ctl_err_hold(false); /* what is still held: printed */
    if (r.out && r.out != stderr)
        fclose(r.out);
    ctl_meta_free(&r.meta);
    return rc;
}
