#include "config/options.h"

#include "system/log.h"
#include "rt/paths.h"
#include "rt/util.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    OPT_CONFIG = 1000, OPT_CHECK, OPT_USER, OPT_SOCKET, OPT_STATE, OPT_PROC, OPT_SYS,
    OPT_INTERVAL, OPT_LOG_LEVEL, OPT_LOG_TARGET, OPT_IDLE, OPT_ADMIN_GROUP, OPT_VERSION,
    OPT_S3_ENDPOINT, OPT_S3_REGION, OPT_RET_AGE, OPT_RET_SIZE, OPT_LOG_FILE, OPT_SET,
};

void rt_options_usage(FILE *f)
{
    fprintf(f,
            "Usage: resource-trackerd [OPTIONS]\n"
            "Samples the host and tracks jobs (process trees); serves com.sparecores.ResourceTracker\n"
            "over varlink on a Unix socket. Options override the configuration file.\n\n"
            "  --config FILE           configuration file (default " RT_DEFAULT_CONFIG_FILE ")\n"
            "  --check-config          validate the configuration, print it and exit\n"
            "  -q, --quiet             with --check-config: print only errors\n"
            "  --user                  per-user daemon: socket under $XDG_RUNTIME_DIR, state under\n"
            "                          $XDG_STATE_HOME\n"
            "  --socket PATH           listen on PATH (default " RT_SYSTEM_SOCKET ")\n"
            "  --state-dir DIR         keep jobs and samples in DIR (default " RT_DEFAULT_STATE_DIR ")\n"
            "  --proc-root DIR         read process and host data from DIR instead of /proc\n"
            "  --sys-root DIR          read device data from DIR instead of /sys\n"
            "  --interval DURATION     sampling interval (default 1s)\n"
            "  --retention-max-age D   remove ended jobs older than D (default 30d; 0 = keep)\n"
            "  --retention-max-size S  keep jobs and samples under S, fairly between users (default 1G; 0 = no limit)\n"
            "  --admin-group NAME      members may act on every job (default resource-tracker)\n"
            "  --exit-on-idle D        exit after D without clients and running jobs\n"
            "  --s3-endpoint URL       upload batches to this S3-compatible endpoint (path-style)\n"
            "                          instead of AWS; --s3-region REGION to sign for\n"
            "  --log-level LEVEL       err, warning, notice, info or debug (default info)\n"
            "  --log-target TARGET     auto, stderr or journal (default auto)\n"
            "  --log-file FILE         once serving, log to FILE (relative: in the state\n"
            "                          directory) in place of stderr, which is then closed\n"
            "  --set KEY=VALUE         set any configuration key (\"cgroups.run=false\"); like the\n"
            "                          flags above, it holds over the file and across reloads\n"
            "  -h, --help              show this help\n"
            "  --version               show the version\n"
            "Durations: 1, 0.5, \"500ms\", \"30s\", \"5min\", \"2h\", \"30d\"; sizes: \"64K\", \"1G\".\n");
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "resource-trackerd: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'resource-trackerd --help'.\n");
    return 2;
}

int rt_options_parse(int argc, char **argv, struct rt_daemon *d, struct rt_options *o)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, OPT_CONFIG},
        {"check-config", no_argument, NULL, OPT_CHECK},
        {"quiet", no_argument, NULL, 'q'},
        {"user", no_argument, NULL, OPT_USER},
        {"socket", required_argument, NULL, OPT_SOCKET},
        {"state-dir", required_argument, NULL, OPT_STATE},
        {"proc-root", required_argument, NULL, OPT_PROC},
        {"sys-root", required_argument, NULL, OPT_SYS},
        {"interval", required_argument, NULL, OPT_INTERVAL},
        {"retention-max-age", required_argument, NULL, OPT_RET_AGE},
        {"retention-max-size", required_argument, NULL, OPT_RET_SIZE},
        {"retention-max-bytes", required_argument, NULL, OPT_RET_SIZE},
        {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
        {"log-target", required_argument, NULL, OPT_LOG_TARGET},
        {"log-file", required_argument, NULL, OPT_LOG_FILE},
        {"exit-on-idle", required_argument, NULL, OPT_IDLE},
        {"admin-group", required_argument, NULL, OPT_ADMIN_GROUP},
        {"s3-endpoint", required_argument, NULL, OPT_S3_ENDPOINT},
        {"s3-region", required_argument, NULL, OPT_S3_REGION},
        {"set", required_argument, NULL, OPT_SET},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    /* Flags that map to configuration keys, parsed with the file's rules. */
    static const struct {
        int opt;
        const char *key;
    } keyed[] = {
        {OPT_SOCKET, "socket"}, {OPT_STATE, "state_dir"}, {OPT_PROC, "proc_root"},
        {OPT_SYS, "sys_root"}, {OPT_INTERVAL, "interval"}, {OPT_LOG_LEVEL, "log_level"},
        {OPT_IDLE, "exit_on_idle"}, {OPT_ADMIN_GROUP, "admin_group"},
        {OPT_S3_ENDPOINT, "upload.s3_endpoint"}, {OPT_S3_REGION, "upload.s3_region"},
        {OPT_RET_AGE, "retention.max_age"}, {OPT_RET_SIZE, "retention.max_size"},
    };
    memset(o, 0, sizeof(*o));
    memset(&d->overrides, 0, sizeof(d->overrides));
    char err[512];
    int opt;
    opterr = 0;
    int li = 0;
    while ((opt = getopt_long(argc, argv, "hq", longopts, &li)) != -1) {
        bool done = false;
        for (size_t i = 0; i < RT_ARRAY_SIZE(keyed) && !done; i++) {
            if (keyed[i].opt != opt)
                continue;
            if (rt_config_override_set(&d->overrides, keyed[i].key, optarg, err, sizeof(err)) < 0) {
                /* "key: why" -> "invalid --flag: why" */
                const char *why = strstr(err, ": ");
                fprintf(stderr, "resource-trackerd: invalid --%s: %s\nTry 'resource-trackerd --help'.\n",
                        longopts[li].name, why ? why + 2 : err);
                return 2;
            }
            done = true;
        }
        if (done)
            continue;
        switch (opt) {
        case OPT_CONFIG: rt_strlcpy(d->config_path, optarg, sizeof(d->config_path)); break;
        case OPT_CHECK: o->check_config = true; break;
        case 'q': o->quiet = true; break;
        case OPT_USER: rt_config_override_set(&d->overrides, "user_mode", "true", err, sizeof(err)); break;
        case OPT_LOG_TARGET:
            if (strcmp(optarg, "auto") == 0)
                o->log_target = RT_LOGT_AUTO;
            else if (strcmp(optarg, "stderr") == 0)
                o->log_target = RT_LOGT_STDERR;
            else if (strcmp(optarg, "journal") == 0)
                o->log_target = RT_LOGT_JOURNAL;
            else
                return usage_error("invalid --log-target: %s (auto, stderr or journal)", optarg);
            break;
        case OPT_LOG_FILE:
            if (!*optarg || rt_strlcpy(d->log_file, optarg, sizeof(d->log_file)) >= sizeof(d->log_file))
                return usage_error("invalid --log-file: %s", optarg);
            break;
        case OPT_SET: {
            char key[128];
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg || (size_t)(eq - optarg) >= sizeof(key))
                return usage_error("invalid --set: %s (KEY=VALUE)", optarg);
            memcpy(key, optarg, (size_t)(eq - optarg));
            key[eq - optarg] = '\0';
            if (rt_config_override_set(&d->overrides, key, eq + 1, err, sizeof(err)) < 0)
                return usage_error("invalid --set: %s", err);
            break;
        }
        case 'h': o->help = true; break;
        case OPT_VERSION: o->version = true; break;
        default: return usage_error("unknown option %s", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument %s", argv[optind]);
    return 0;
}

int rt_options_config(struct rt_daemon *d, char *err, size_t errlen)
{
    const char *path = d->config_path[0] ? d->config_path : NULL;
    struct rt_config *c = &d->cfg;
    /* A user daemon serves its owner only: no system file, private paths. */
    bool user = (d->overrides.set & RT_CFG_USER_MODE) && d->overrides.values.user_mode;
    if (user && !path) {
        rt_config_defaults(c);
        rt_config_apply_overrides(c, &d->overrides);
    } else if (rt_config_reload(path, &d->overrides, c, err, errlen) < 0) {
        return -EINVAL;
    }
    if (c->user_mode) {
        if (!(d->overrides.set & RT_CFG_SOCKET_PATH) &&
            rt_user_socket_path(c->socket_path, sizeof(c->socket_path)) < 0) {
            snprintf(err, errlen, "no usable directory for the user socket");
            return -EINVAL;
        }
        /* Without a usable home (a service account, HOME=/nonexistent),
         * the state can live next to the default socket, in our 0700 dir. */
        char dflt[PATH_MAX];
        d->state_fallback[0] = '\0';
        const char *xdg = getenv("XDG_STATE_HOME");
        if (!(d->overrides.set & RT_CFG_STATE_DIR) && !(xdg && xdg[0] == '/') &&
            rt_user_socket_path(dflt, sizeof(dflt)) == 0 && strcmp(dflt, c->socket_path) == 0) {
            rt_strlcpy(d->state_fallback, c->socket_path, sizeof(d->state_fallback));
            char *slash = strrchr(d->state_fallback, '/');
            rt_strlcpy(slash + 1, "state", sizeof(d->state_fallback) - (size_t)(slash + 1 - d->state_fallback));
        }
        if (!(d->overrides.set & RT_CFG_STATE_DIR) && rt_user_state_dir(c->state_dir, sizeof(c->state_dir)) < 0) {
            if (!d->state_fallback[0]) {
                snprintf(err, errlen, "no HOME or XDG_STATE_HOME for the user state directory");
                return -EINVAL;
            }
            rt_strlcpy(c->state_dir, d->state_fallback, sizeof(c->state_dir));
        }
        c->admin_group[0] = '\0';
    }
    return 0;
}
