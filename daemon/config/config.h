/* The daemon's configuration: built-in defaults, then the libconfig file
 * (/etc/resource-tracker/resource-trackerd.conf), then command-line flags. */
#ifndef RT_CONFIG_H
#define RT_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RT_DEFAULT_SYSTEM_SOCKET "/run/resource-tracker/" "com.sparecores.ResourceTracker"
#define RT_DEFAULT_STATE_DIR "/var/lib/resource-tracker"
#define RT_DEFAULT_CONFIG_FILE RT_SYSCONFDIR "/resource-trackerd.conf"
#define RT_DEFAULT_API_URL "https://api.sentinel.sparecores.net"

struct rt_config {
    /* sampling */
    double interval_secs;              /* base tick, > 0 */
    /* where things live */
    char socket_path[PATH_MAX];
    char state_dir[PATH_MAX];
    char proc_root[PATH_MAX];
    char sys_root[PATH_MAX];
    /* retention of finished jobs */
    uint64_t retention_max_age_secs;
    uint64_t retention_max_bytes;
    unsigned retention_max_jobs_per_uid; /* ended jobs kept per user */
    /* authorisation and limits */
    char admin_group[64];              /* "" = root only */
    unsigned max_connections;
    unsigned max_connections_per_uid;
    unsigned max_jobs_per_uid;         /* running jobs */
    unsigned max_sample_rate_per_uid;  /* samples per second of a user's running jobs together */
    size_t max_message_bytes;
    unsigned reserved_connections;     /* of max_connections, for root and the admin group */
    size_t max_buffer_per_uid;         /* unread replies and partial input of one user's connections */
    size_t max_buffer_total;           /* the same for all connections */
    unsigned idle_timeout_secs;        /* a connection with no call, stream or data in flight */
    unsigned message_timeout_secs;     /* a message started and not completed */
    unsigned reply_timeout_secs;       /* replies queued and none of them read */
    /* upload */
    char api_url[512];
    unsigned upload_interval_secs;
    char token_credential[128];        /* name under $CREDENTIALS_DIRECTORY */
    uint64_t spool_max_bytes;
    char s3_endpoint[512];             /* "" = AWS; else path-style S3-compatible store */
    char s3_region[64];                /* region to sign for with s3_endpoint */
    /* cgroups */
    bool cgroup_run;                   /* `run` puts its command in a cgroup of its own */
    char cgroup_parent[PATH_MAX];      /* where the daemon makes them when systemd does not */
    /* notes on requested against used (jobs/notes.h): percentages, 0 = off */
    unsigned notes_cpu_efficiency_below;
    unsigned notes_memory_usage_below;
    unsigned notes_gpu_usage_below;
    unsigned notes_throttled_above;
    unsigned notes_memory_pressure_above;
    unsigned notes_min_duration_secs;  /* shorter jobs: no efficiency notes */
    /* notifications at the end of a job (notice/notice.h) */
    char notify_sendmail[PATH_MAX];    /* the sendmail that mail goes through */
    char notify_adopted[2048 + 1];     /* adopted jobs' target ("%u": the user), "" = none */
    bool notify_adopted_every_job;     /* false: adopted jobs notify when failed or noted only */
    /* GPUs held but idle: VRAM held at least idle_vram_min while the use
     * stays at or below idle_util_max % for idle_after */
    unsigned gpu_idle_after_secs;
    unsigned gpu_idle_util_max;
    uint64_t gpu_idle_vram_min_bytes;
    /* jobs the daemon makes by itself (jobs/adopt.h) */
    bool adopt_slurm;
    bool adopt_containers;
    char adopt_cgroups[1024];          /* glob patterns separated by spaces; "" = none */
    /* logging */
    int log_level;                     /* syslog level */
    /* modes */
    bool user_mode;                    /* --user: socket/state under XDG dirs */
    unsigned exit_on_idle_secs;        /* 0 = never (private daemons use this) */
};

/* Every key at its default (the key table's column). */
void rt_config_defaults(struct rt_config *c);

/* Exit status for a refused configuration: sysexits' EX_CONFIG, which systemd
 * also shows as "CONFIG" (the unit has RestartPreventExitStatus=78). */
#define RT_EXIT_CONFIG 78

/* One bit per setting: which ones came from the command line, and which
 * ones differ between two configurations (rt_config_diff). */
enum {
    RT_CFG_INTERVAL = 1ull << 0,
    RT_CFG_SOCKET_PATH = 1ull << 1,
    RT_CFG_STATE_DIR = 1ull << 2,
    RT_CFG_ADMIN_GROUP = 1ull << 3,
    RT_CFG_LOG_LEVEL = 1ull << 4,
    RT_CFG_RETENTION_MAX_AGE = 1ull << 5,
    RT_CFG_RETENTION_MAX_BYTES = 1ull << 6,
    RT_CFG_MAX_CONNECTIONS = 1ull << 7,
    RT_CFG_MAX_CONNECTIONS_PER_UID = 1ull << 8,
    RT_CFG_MAX_JOBS_PER_UID = 1ull << 9,
    RT_CFG_MAX_MESSAGE_BYTES = 1ull << 10,
    RT_CFG_API_URL = 1ull << 11,
    RT_CFG_UPLOAD_INTERVAL = 1ull << 12,
    RT_CFG_TOKEN_CREDENTIAL = 1ull << 13,
    RT_CFG_SPOOL_MAX_BYTES = 1ull << 14,
    /* command line only */
    RT_CFG_PROC_ROOT = 1ull << 15,
    RT_CFG_SYS_ROOT = 1ull << 16,
    RT_CFG_USER_MODE = 1ull << 17,
    RT_CFG_EXIT_ON_IDLE = 1ull << 18,
    RT_CFG_S3_ENDPOINT = 1ull << 19,
    RT_CFG_S3_REGION = 1ull << 20,
    RT_CFG_MAX_SAMPLE_RATE_PER_UID = 1ull << 21,
    RT_CFG_RESERVED_CONNECTIONS = 1ull << 22,
    RT_CFG_MAX_BUFFER_PER_UID = 1ull << 23,
    RT_CFG_MAX_BUFFER_TOTAL = 1ull << 24,
    RT_CFG_IDLE_TIMEOUT = 1ull << 25,
    RT_CFG_MESSAGE_TIMEOUT = 1ull << 26,
    RT_CFG_REPLY_TIMEOUT = 1ull << 27,
    RT_CFG_RETENTION_MAX_JOBS = 1ull << 28,
    RT_CFG_CGROUP_RUN = 1ull << 29,
    RT_CFG_CGROUP_PARENT = 1ull << 30,
    RT_CFG_NOTES_CPU_BELOW = 1ull << 31,
    RT_CFG_NOTES_MEMORY_BELOW = 1ull << 32,
    RT_CFG_NOTES_GPU_BELOW = 1ull << 33,
    RT_CFG_NOTES_THROTTLED_ABOVE = 1ull << 34,
    RT_CFG_NOTES_PRESSURE_ABOVE = 1ull << 35,
    RT_CFG_NOTES_MIN_DURATION = 1ull << 36,
    RT_CFG_NOTIFY_SENDMAIL = 1ull << 37,
    RT_CFG_NOTIFY_ADOPTED = 1ull << 38,
    RT_CFG_NOTIFY_ADOPTED_EVERY_JOB = 1ull << 39,
    RT_CFG_GPU_IDLE_AFTER = 1ull << 40,
    RT_CFG_GPU_IDLE_UTIL_MAX = 1ull << 41,
    RT_CFG_GPU_IDLE_VRAM_MIN = 1ull << 42,
    RT_CFG_ADOPT_SLURM = 1ull << 43,
    RT_CFG_ADOPT_CONTAINERS = 1ull << 44,
    RT_CFG_ADOPT_CGROUPS = 1ull << 45,
};

/* Command-line flags: the values in .values whose bits are in .set win over
 * the file, at start and again on every reload. */
struct rt_config_overrides {
    struct rt_config values;
    uint64_t set;
};

/* Read a configuration file, then its drop-ins (PATH.d/NAME.conf in lexical
 * order, each overriding the keys it sets: config/dropins.h) on top of *c
 * (callers start from rt_config_defaults). path NULL means
 * RT_DEFAULT_CONFIG_FILE, whose absence is fine; an explicitly named file
 * must exist. Returns 0, or -1 with a one-line message "FILE:LINE: KEY: why"
 * in err and *c untouched. A bad file is a syntax error, a value of the
 * wrong type, an unknown key or an out-of-range value; all are refused, none
 * is ignored, and one bad file refuses the whole configuration. */
int rt_config_load(const char *path, struct rt_config *c, char *err, size_t errlen);

/* Parse one value for KEY, with the file's units and ranges, into o->values
 * and set its bit in o->set. KEY is a file key ("interval",
 * "upload.interval", …) or a command-line-only one: "proc_root",
 * "sys_root", "user_mode" ("true"/"false"), "exit_on_idle" (a duration).
 * 0, or -1 with "KEY: why" in err. */
int rt_config_override_set(struct rt_config_overrides *o, const char *key, const char *value,
                           char *err, size_t errlen);
/* Copy the overridden fields of o into c. */
void rt_config_apply_overrides(struct rt_config *c, const struct rt_config_overrides *o);

/* Defaults, then the file, then the overrides (o may be NULL), then the
 * cross-field checks; on success *c is replaced, on error it is untouched.
 * Use it at start and on SIGHUP: a bad file on reload keeps the running
 * configuration. The caller compares old and new with rt_config_diff. */
int rt_config_reload(const char *path, const struct rt_config_overrides *o, struct rt_config *c,
                     char *err, size_t errlen);

/* Checks that span settings (per-user limits within the totals, room left
 * by the reserved connections). */
int rt_config_validate(const struct rt_config *c, char *err, size_t errlen);

/* RT_CFG_* bits of the settings that differ. */
uint64_t rt_config_diff(const struct rt_config *a, const struct rt_config *b);
/* A reload: copy into running the settings that a running daemon applies at
 * once (the key table says which); the bits of those that differ but wait
 * for a restart are returned. */
uint64_t rt_config_adopt(struct rt_config *running, const struct rt_config *next);
/* The file key of a single RT_CFG_* bit ("upload.interval"), for messages. */
const char *rt_config_key_name(uint64_t bit);

/* Write c in the file's syntax (what --check-config prints); the output
 * loads back to the same configuration. Command-line-only settings are
 * written as comments. */
void rt_config_write(FILE *f, const struct rt_config *c);

#endif
