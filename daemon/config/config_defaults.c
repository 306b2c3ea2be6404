#include "config/config.h"

#include "rt/util.h"

#include <string.h>
#include <syslog.h>

void rt_config_defaults(struct rt_config *c)
{
    memset(c, 0, sizeof(*c));
    c->interval_secs = 1.0;
    rt_strlcpy(c->socket_path, RT_DEFAULT_SYSTEM_SOCKET, sizeof(c->socket_path));
    rt_strlcpy(c->state_dir, RT_DEFAULT_STATE_DIR, sizeof(c->state_dir));
    rt_strlcpy(c->proc_root, "/proc", sizeof(c->proc_root));
    rt_strlcpy(c->sys_root, "/sys", sizeof(c->sys_root));
    c->retention_max_age_secs = 30ULL * 24 * 3600;
    c->retention_max_bytes = 1024ULL * 1024 * 1024;
    rt_strlcpy(c->admin_group, "resource-tracker", sizeof(c->admin_group));
    c->max_connections = 1024;
    c->max_connections_per_uid = 256;
    c->max_jobs_per_uid = 64;
    c->max_message_bytes = 1024 * 1024;
    rt_strlcpy(c->api_url, RT_DEFAULT_API_URL, sizeof(c->api_url));
    c->upload_interval_secs = 60;
    rt_strlcpy(c->token_credential, "sentinel-token", sizeof(c->token_credential));
    c->spool_max_bytes = 256ULL * 1024 * 1024;
    c->log_level = LOG_INFO;
}
