/* resource-trackerctl top [--iterations N] [--sort COLUMN] [--mine]: the
 * verb, its two streams and the wait on them, the terminal and signals. */
#include "live/top.h"

#include "args.h"
#include "live/stream.h"
#include "module.h"
#include "rt/json.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define M(name) RT_VL_INTERFACE "." name

enum { SORT = CTL_OPT_LONG, MINE, ITERATIONS };

static const char usage[] =
    "Usage: resource-trackerctl top [--sort COLUMN] [--mine] [--iterations N]\n"
    "The host and the jobs you may see, refreshed every sampling interval.\n"
    "Keys: q quit, up down (k j) select, Enter its processes (Esc back), / filter,\n"
    "< > sort column, r reverse, c cores, m memory, t time, a all jobs or yours,\n"
    "space pause, h help. When stdout is not a terminal, prints plain lines, one\n"
    "refresh per interval.\n\n"
    "  --sort COLUMN    id, name, user, s, cores (default), rss, pss, read, write, gpu,\n"
    "                   vram, time or command\n"
    "  --mine           only your own jobs (administrators see everyone's by default)\n"
    "  --iterations N   exit after N refreshes\n"
    "  -h, --help       this help\n";

static const struct ctl_opt opts[] = {
    {"sort", SORT, "COLUMN", "a column is id, name, user, s, cores, rss, pss, read, write, gpu, vram, time or command",
     CTL_KIND_NONE},
    {"mine", MINE, NULL, NULL, CTL_KIND_NONE},
    {"iterations", ITERATIONS, "N", "a number of refreshes is a whole number above 0", CTL_KIND_NONE},
    {NULL, 0, NULL, NULL, CTL_KIND_NONE},
};

const struct ctl_spec ctl_top_spec = {.verb = "top", .usage = usage, .opts = opts};

static int sigfd = -1;

int top_wait(struct rt_vl_client *host, struct rt_vl_client *jobs, bool watch_stdin, int *which,
             struct json_object **reply, int *sig)
{
    struct rt_vl_client *cs[2] = {host, jobs};
    for (;;) {
        /* Replies already read come first: poll() does not see them. */
        for (int k = 0; k < 2; k++) {
            int r = ctl_stream_next(cs[k], reply, 0);
            if (r == 1)
                *which = k;
            if (r != 0)
                return r;
        }
        struct pollfd p[4] = {{.fd = host->fd, .events = POLLIN},
                              {.fd = jobs->fd, .events = POLLIN},
                              {.fd = sigfd, .events = POLLIN},
                              {.fd = watch_stdin ? STDIN_FILENO : -1, .events = POLLIN}};
        if (poll(p, 4, -1) < 0) {
            if (errno == EINTR && watch_stdin)
                return 2; /* SIGWINCH: the terminal library has a KEY_RESIZE for us */
            continue;
        }
        if (p[2].revents) {
            struct signalfd_siginfo si;
            if (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                *sig = (int)si.ssi_signo;
                return 0;
            }
        }
        if (p[3].revents)
            return 2;
    }
}

static int parse(struct ctl *ctl, struct top *t, int argc, char **argv)
{
    struct ctl_args a;
    ctl_args_init(&a, ctl, &ctl_top_spec);
    for (int o; (o = ctl_args_next(&a, argc, argv)) != CTL_ARGS_END;) {
        int64_t n;
        int c;
        switch (o) {
        case CTL_ARGS_STOP: return a.rc ? a.rc : -1;
        case SORT:
            if ((c = top_col_from_name(optarg)) < 0)
                return ctl_args_invalid(&a, o, optarg);
            t->sort = (enum top_col)c;
            break;
        case MINE: t->mine_only = true; break;
        case ITERATIONS:
            if (!ctl_parse_count(optarg, &n))
                return ctl_args_invalid(&a, o, optarg);
            t->iterations = (long)n;
            break;
        }
    }
    return ctl_args_operands(&a, argc, argv, NULL, 0, 0);
}

/* Who we are to the daemon (the header says whose jobs are shown). */
static int daemon_info(struct ctl *ctl, struct top *t)
{
    struct rt_vl_client c = {.fd = -1};
    struct json_object *reply = NULL, *p;
    int rc = ctl_connect(ctl, &c);
    if (!rc)
        rc = ctl_call(&c, M("Info"), NULL, &reply, &p);
    if (!rc) {
        int64_t uid = 0;
        rt_json_get_i64(p, "caller_uid", &uid);
        t->uid = (uid_t)uid;
        rt_json_get_bool(p, "caller_is_admin", &t->admin);
        rt_json_get_double(p, "interval_secs", &t->interval);
        const char *s = rt_json_get_string(p, "hostname");
        snprintf(t->hostname, sizeof(t->hostname), "%s", s ? s : "");
        s = rt_json_get_string(p, "version");
        snprintf(t->version, sizeof(t->version), "%s", s ? s : "");
    }
    json_object_put(reply);
    rt_vl_client_close(&c);
    return rc;
}

/* The full-screen view is a module: only top in a terminal maps ncurses. */
static int screen_run(struct top *t, struct rt_vl_client *host, struct rt_vl_client *jobs)
{
    char err[512];
    int (*run)(struct top *, struct rt_vl_client *, struct rt_vl_client *) =
        ctl_module_sym(CTL_MODULE_TOP, "top_screen_run", err, sizeof(err));
    if (!run) {
        CTL_ERR("top: %s", err);
        return RT_EXIT_FAILURE;
    }
    return run(t, host, jobs);
}

int ctl_top(struct ctl *ctl, int argc, char **argv)
{
    struct top t = {.sort = TOP_CORES};
    rt_sample_init(&t.host);
    int rc = parse(ctl, &t, argc, argv);
    if (rc) {
        rt_sample_free(&t.host);
        return rc < 0 ? 0 : rc;
    }
    struct rt_vl_client host = {.fd = -1}, jobs = {.fd = -1}, calls = {.fd = -1};
    rc = daemon_info(ctl, &t);
    if (!rc && ctl_connect(ctl, &calls) == 0)
        t.calls = &calls; /* the GPU panel's holders; without it, the panel shows less */
    if (!rc)
        rc = ctl_stream_open(ctl, &host, M("StreamHostSamples"), NULL);
    if (!rc) {
        /* Every job we may see; "mine" is a filter here, so it toggles at once. */
        struct json_object *p = json_object_new_object();
        json_object_object_add(p, "all", json_object_new_boolean(1));
        rc = ctl_stream_open(ctl, &jobs, M("StreamJobs"), p);
    }
    if (!rc) {
        /* Signals that end us arrive through a descriptor, so the terminal
         * is restored by the loop that owns it, never from a handler. */
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGHUP);
        sigprocmask(SIG_BLOCK, &set, NULL);
        sigfd = signalfd(-1, &set, SFD_CLOEXEC);
        bool tty = isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
        rc = tty ? screen_run(&t, &host, &jobs) : top_plain_run(&t, &host, &jobs);
        close(sigfd);
        sigfd = -1;
    }
    rt_vl_client_close(&host);
    rt_vl_client_close(&jobs);
    rt_vl_client_close(&calls);
    top_free(&t);
    return rc;
}
