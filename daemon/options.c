#include "options.h"

#include "log.h"
#include "rt/paths.h"
#include "rt/util.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    OPT_CONFIG = 1000, OPT_CHECK, OPT_USER, OPT_SOCKET, OPT_STATE, OPT_PROC, OPT_SYS,
    OPT_INTERVAL, OPT_LOG_LEVEL, OPT_LOG_TARGET, OPT_IDLE, OPT_ADMIN_GROUP, OPT_VERSION,
    OPT_S3_ENDPOINT, OPT_S3_REGION,
    OPT_RET_AGE, OPT_RET_BYTES,
};

void rt_options_usage(FILE *f)
{
    fprintf(f,
            "Usage: resource-trackerd [OPTIONS]\n"
            "Samples the host and tracks jobs (process trees); serves com.sparecores.ResourceTracker\n"
            "over varlink on a Unix socket.\n\n"
            "  --config FILE        configuration file (default " RT_DEFAULT_CONFIG_FILE ")\n"
            "  --check-config       validate the configuration and exit\n"
            "  --user               per-user daemon: socket under $XDG_RUNTIME_DIR, state under\n"
            "                       $XDG_STATE_HOME\n"
            "  --socket PATH        listen on PATH (default " RT_SYSTEM_SOCKET ")\n"
            "  --state-dir DIR      keep jobs and samples in DIR (default " RT_DEFAULT_STATE_DIR ")\n"
            "  --proc-root DIR      read process and host data from DIR instead of /proc\n"
            "  --sys-root DIR       read device data from DIR instead of /sys\n"
            "  --interval SECS      sampling interval (default 1)\n"
            "  --admin-group NAME   members may act on every job (default resource-tracker)\n"
            "  --exit-on-idle SECS  exit after SECS without clients and running jobs\n"
            "  --s3-endpoint URL    upload batches to this S3-compatible endpoint (path-style)\n"
            "                       instead of AWS; --s3-region REGION to sign for\n"
            "  --retention-max-age SECS\n"
            "                       remove ended jobs older than SECS (default 30 days, 0 = never)\n"
            "  --retention-max-bytes BYTES\n"
            "                       remove the oldest ended jobs while samples take more than\n"
            "                       BYTES (default 1 GiB, 0 = no limit)\n"
            "  --log-level LEVEL    err, warning, notice, info or debug (default info)\n"
            "  --log-target TARGET  auto, stderr or journal (default auto)\n"
            "  -h, --help           show this help\n"
            "  --version            show the version\n");
}

static int bad(const char *what, const char *value)
{
    fprintf(stderr, "resource-trackerd: invalid %s: %s\n", what, value);
    return 2;
}

int rt_options_parse(int argc, char **argv, struct rt_daemon *d, struct rt_options *o)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, OPT_CONFIG},
        {"check-config", no_argument, NULL, OPT_CHECK},
        {"user", no_argument, NULL, OPT_USER},
        {"socket", required_argument, NULL, OPT_SOCKET},
        {"state-dir", required_argument, NULL, OPT_STATE},
        {"proc-root", required_argument, NULL, OPT_PROC},
        {"sys-root", required_argument, NULL, OPT_SYS},
        {"interval", required_argument, NULL, OPT_INTERVAL},
        {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
        {"log-target", required_argument, NULL, OPT_LOG_TARGET},
        {"exit-on-idle", required_argument, NULL, OPT_IDLE},
        {"admin-group", required_argument, NULL, OPT_ADMIN_GROUP},
        {"s3-endpoint", required_argument, NULL, OPT_S3_ENDPOINT},
        {"s3-region", required_argument, NULL, OPT_S3_REGION},
        {"retention-max-age", required_argument, NULL, OPT_RET_AGE},
        {"retention-max-bytes", required_argument, NULL, OPT_RET_BYTES},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    struct rt_config *c = &d->cfg;
    bool socket_set = false, state_set = false;
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        char *end;
        switch (opt) {
        case OPT_CONFIG: rt_strlcpy(d->config_path, optarg, sizeof(d->config_path)); break;
        case OPT_CHECK: o->check_config = true; break;
        case OPT_USER: c->user_mode = true; break;
        case OPT_SOCKET: rt_strlcpy(c->socket_path, optarg, sizeof(c->socket_path)); socket_set = true; break;
        case OPT_STATE: rt_strlcpy(c->state_dir, optarg, sizeof(c->state_dir)); state_set = true; break;
        case OPT_PROC: rt_strlcpy(c->proc_root, optarg, sizeof(c->proc_root)); break;
        case OPT_SYS: rt_strlcpy(c->sys_root, optarg, sizeof(c->sys_root)); break;
        case OPT_INTERVAL:
            c->interval_secs = strtod(optarg, &end);
            if (*end || !(c->interval_secs >= 0.01 && c->interval_secs <= 3600))
                return bad("--interval (0.01 to 3600 seconds)", optarg);
            break;
        case OPT_LOG_LEVEL:
            c->log_level = rt_log_level_from_string(optarg);
            if (c->log_level < 0)
                return bad("--log-level", optarg);
            break;
        case OPT_LOG_TARGET:
            if (strcmp(optarg, "auto") == 0)
                o->log_target = RT_LOGT_AUTO;
            else if (strcmp(optarg, "stderr") == 0)
                o->log_target = RT_LOGT_STDERR;
            else if (strcmp(optarg, "journal") == 0)
                o->log_target = RT_LOGT_JOURNAL;
            else
                return bad("--log-target", optarg);
            break;
        case OPT_IDLE: {
            unsigned long v = strtoul(optarg, &end, 10);
            if (*end || v > 86400)
                return bad("--exit-on-idle", optarg);
            c->exit_on_idle_secs = (unsigned)v;
            break;
        }
        case OPT_ADMIN_GROUP: rt_strlcpy(c->admin_group, optarg, sizeof(c->admin_group)); break;
        case OPT_S3_ENDPOINT: rt_strlcpy(c->s3_endpoint, optarg, sizeof(c->s3_endpoint)); break;
        case OPT_S3_REGION: rt_strlcpy(c->s3_region, optarg, sizeof(c->s3_region)); break;
        case OPT_RET_AGE:
            if (!rt_parse_u64(optarg, &c->retention_max_age_secs))
                return bad("--retention-max-age (seconds)", optarg);
            break;
        case OPT_RET_BYTES:
            if (!rt_parse_u64(optarg, &c->retention_max_bytes))
                return bad("--retention-max-bytes (bytes)", optarg);
            break;
        case 'h': o->help = true; break;
        case OPT_VERSION: o->version = true; break;
        default:
            fprintf(stderr, "resource-trackerd: unknown option %s\n", argv[optind - 1]);
            fprintf(stderr, "Try 'resource-trackerd --help'.\n");
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "resource-trackerd: unexpected argument %s\n", argv[optind]);
        return 2;
    }
    if (c->user_mode) {
        if (!socket_set && rt_user_socket_path(c->socket_path, sizeof(c->socket_path)) < 0)
            return bad("user socket path", "no usable runtime directory");
        if (!state_set && rt_user_state_dir(c->state_dir, sizeof(c->state_dir)) < 0)
            return bad("user state directory", "no HOME or XDG_STATE_HOME");
        c->admin_group[0] = '\0'; /* a user daemon serves its owner (and root) */
    }
    return 0;
}
