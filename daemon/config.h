/* The daemon's configuration: built-in defaults, then the libconfig file
 * (/etc/resource-tracker/resource-trackerd.conf), then command-line flags. */
#ifndef RT_CONFIG_H
#define RT_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
    /* authorisation and limits */
    char admin_group[64];              /* "" = root only */
    unsigned max_connections;
    unsigned max_connections_per_uid;
    unsigned max_jobs_per_uid;         /* running jobs */
    size_t max_message_bytes;
    /* upload */
    char api_url[512];
    unsigned upload_interval_secs;
    char token_credential[128];        /* name under $CREDENTIALS_DIRECTORY */
    uint64_t spool_max_bytes;
    char s3_endpoint[512];             /* "" = AWS; else path-style S3-compatible store */
    char s3_region[64];                /* region to sign for with s3_endpoint */
    /* logging */
    int log_level;                     /* syslog level */
    /* modes */
    bool user_mode;                    /* --user: socket/state under XDG dirs */
    unsigned exit_on_idle_secs;        /* 0 = never (private daemons use this) */
};

void rt_config_defaults(struct rt_config *c);

#endif
