/* Every key of the configuration, described once. */
#include "config/keys.h"

#include "rt/util.h"

#include <stddef.h>

#define F(m) offsetof(struct rt_config, m), sizeof(((struct rt_config *)0)->m)

/* Top-level keys, then the groups' keys (path = "group.name"). */
#define TOP(n) n, NULL, n
#define IN(g, n) g "." n, g, n
#define DAY (24 * 3600 * USEC_PER_SEC)

const struct key rt_config_keys[] = {
    {TOP("interval"), K_SECS_DOUBLE, RT_CFG_INTERVAL, F(interval_secs), 100000, 3600 * USEC_PER_SEC, FILE_KEY,
     "1s", LIVE},
    {TOP("socket"), K_SOCKET, RT_CFG_SOCKET_PATH, F(socket_path), 0, 0, FILE_KEY, RT_DEFAULT_SYSTEM_SOCKET,
     RESTART},
    {TOP("state_dir"), K_PATH, RT_CFG_STATE_DIR, F(state_dir), 0, 0, FILE_KEY, RT_DEFAULT_STATE_DIR, RESTART},
    {TOP("admin_group"), K_GROUP, RT_CFG_ADMIN_GROUP, F(admin_group), 0, 0, FILE_KEY, "resource-tracker", LIVE},
    {TOP("log_level"), K_LOGLEVEL, RT_CFG_LOG_LEVEL, F(log_level), 0, 0, FILE_KEY, "info", LIVE},
    {IN("retention", "max_age"), K_SECS_U64, RT_CFG_RETENTION_MAX_AGE, F(retention_max_age_secs), 0,
     36600 * DAY, FILE_KEY, "30d", LIVE},
    {IN("retention", "max_size"), K_BYTES_U64, RT_CFG_RETENTION_MAX_BYTES, F(retention_max_bytes), 0,
     1024 * TIB, FILE_KEY, "1G", LIVE},
    {IN("retention", "max_jobs_per_user"), K_UINT, RT_CFG_RETENTION_MAX_JOBS, F(retention_max_jobs_per_uid), 1,
     10000000, FILE_KEY, "10000", LIVE},
    {IN("limits", "max_connections"), K_UINT, RT_CFG_MAX_CONNECTIONS, F(max_connections), 1, 65536, FILE_KEY,
     "1024", LIVE},
    {IN("limits", "max_connections_per_user"), K_UINT, RT_CFG_MAX_CONNECTIONS_PER_UID,
     F(max_connections_per_uid), 1, 65536, FILE_KEY, "256", LIVE},
    {IN("limits", "max_jobs_per_user"), K_UINT, RT_CFG_MAX_JOBS_PER_UID, F(max_jobs_per_uid), 1, 100000,
     FILE_KEY, "64", LIVE},
    {IN("limits", "max_sample_rate_per_user"), K_UINT, RT_CFG_MAX_SAMPLE_RATE_PER_UID,
     F(max_sample_rate_per_uid), 1, 100000, FILE_KEY, "100", LIVE},
    {IN("limits", "max_message_size"), K_BYTES_SIZE, RT_CFG_MAX_MESSAGE_BYTES, F(max_message_bytes), 4 * KIB,
     64 * MIB, FILE_KEY, "1M", LIVE},
    {IN("limits", "reserved_connections"), K_UINT, RT_CFG_RESERVED_CONNECTIONS, F(reserved_connections), 0,
     65535, FILE_KEY, "16", LIVE},
    {IN("limits", "max_buffer_per_user"), K_BYTES_SIZE, RT_CFG_MAX_BUFFER_PER_UID, F(max_buffer_per_uid), MIB,
     64 * GIB, FILE_KEY, "64M", LIVE},
    {IN("limits", "max_buffer_total"), K_BYTES_SIZE, RT_CFG_MAX_BUFFER_TOTAL, F(max_buffer_total), MIB, 64 * GIB,
     FILE_KEY, "256M", LIVE},
    {IN("limits", "idle_timeout"), K_SECS_UINT, RT_CFG_IDLE_TIMEOUT, F(idle_timeout_secs), USEC_PER_SEC, DAY,
     FILE_KEY, "1min", LIVE},
    {IN("limits", "message_timeout"), K_SECS_UINT, RT_CFG_MESSAGE_TIMEOUT, F(message_timeout_secs), USEC_PER_SEC,
     3600 * USEC_PER_SEC, FILE_KEY, "10s", LIVE},
    {IN("limits", "reply_timeout"), K_SECS_UINT, RT_CFG_REPLY_TIMEOUT, F(reply_timeout_secs), USEC_PER_SEC, DAY,
     FILE_KEY, "1min", LIVE},
    {IN("cgroups", "run"), K_BOOL, RT_CFG_CGROUP_RUN, F(cgroup_run), 0, 0, FILE_KEY, "true", LIVE},
    {IN("cgroups", "parent"), K_PATH, RT_CFG_CGROUP_PARENT, F(cgroup_parent), 0, 0, FILE_KEY, "/resource-tracker",
     LIVE},
    {IN("upload", "api_url"), K_URL, RT_CFG_API_URL, F(api_url), 0, 0, FILE_KEY, RT_DEFAULT_API_URL, RESTART},
    {IN("upload", "interval"), K_SECS_UINT, RT_CFG_UPLOAD_INTERVAL, F(upload_interval_secs), USEC_PER_SEC,
     DAY, FILE_KEY, "60s", RESTART},
    {IN("upload", "token_credential"), K_CREDENTIAL, RT_CFG_TOKEN_CREDENTIAL, F(token_credential), 0, 0,
     FILE_KEY, "sentinel-token", RESTART},
    {IN("upload", "spool_max_size"), K_BYTES_U64, RT_CFG_SPOOL_MAX_BYTES, F(spool_max_bytes), MIB, TIB,
     FILE_KEY, "256M", RESTART},
    {IN("upload", "s3_endpoint"), K_URL, RT_CFG_S3_ENDPOINT, F(s3_endpoint), 0, 0, FILE_KEY, "", RESTART},
    {IN("upload", "s3_region"), K_REGION, RT_CFG_S3_REGION, F(s3_region), 0, 0, FILE_KEY, "", RESTART},
    {IN("notes", "cpu_efficiency_below"), K_UINT, RT_CFG_NOTES_CPU_BELOW, F(notes_cpu_efficiency_below), 0, 100,
     FILE_KEY, "50", LIVE},
    {IN("notes", "memory_usage_below"), K_UINT, RT_CFG_NOTES_MEMORY_BELOW, F(notes_memory_usage_below), 0, 100,
     FILE_KEY, "50", LIVE},
    {IN("notes", "gpu_usage_below"), K_UINT, RT_CFG_NOTES_GPU_BELOW, F(notes_gpu_usage_below), 0, 100, FILE_KEY,
     "25", LIVE},
    {IN("notes", "throttled_above"), K_UINT, RT_CFG_NOTES_THROTTLED_ABOVE, F(notes_throttled_above), 0, 100,
     FILE_KEY, "20", LIVE},
    {IN("notes", "memory_pressure_above"), K_UINT, RT_CFG_NOTES_PRESSURE_ABOVE, F(notes_memory_pressure_above), 0,
     100, FILE_KEY, "10", LIVE},
    {IN("notes", "min_duration"), K_SECS_UINT, RT_CFG_NOTES_MIN_DURATION, F(notes_min_duration_secs), 0, DAY,
     FILE_KEY, "1min", LIVE},
    {IN("notify", "sendmail"), K_PATH, RT_CFG_NOTIFY_SENDMAIL, F(notify_sendmail), 0, 0, FILE_KEY,
     "/usr/sbin/sendmail", RESTART},
    {IN("notify", "adopted"), K_NOTIFY, RT_CFG_NOTIFY_ADOPTED, F(notify_adopted), 0, 0, FILE_KEY, "", LIVE},
    {IN("notify", "adopted_every_job"), K_BOOL, RT_CFG_NOTIFY_ADOPTED_EVERY_JOB, F(notify_adopted_every_job), 0, 0,
     FILE_KEY, "false", LIVE},
    {IN("gpu", "idle_after"), K_SECS_UINT, RT_CFG_GPU_IDLE_AFTER, F(gpu_idle_after_secs), USEC_PER_SEC, 7 * DAY,
     FILE_KEY, "10min", LIVE},
    {IN("gpu", "idle_util_max"), K_UINT, RT_CFG_GPU_IDLE_UTIL_MAX, F(gpu_idle_util_max), 0, 100, FILE_KEY, "5",
     LIVE},
    {IN("gpu", "idle_vram_min"), K_BYTES_U64, RT_CFG_GPU_IDLE_VRAM_MIN, F(gpu_idle_vram_min_bytes), 0, TIB,
     FILE_KEY, "256M", LIVE},
    {IN("adopt", "slurm"), K_BOOL, RT_CFG_ADOPT_SLURM, F(adopt_slurm), 0, 0, FILE_KEY, "false", LIVE},
    {IN("adopt", "containers"), K_BOOL, RT_CFG_ADOPT_CONTAINERS, F(adopt_containers), 0, 0, FILE_KEY, "false", LIVE},
    {IN("adopt", "cgroups"), K_GLOBS, RT_CFG_ADOPT_CGROUPS, F(adopt_cgroups), 0, 0, FILE_KEY, "", LIVE},
    {TOP("proc_root"), K_PATH, RT_CFG_PROC_ROOT, F(proc_root), 0, 0, CLI_ONLY, "/proc", RESTART},
    {TOP("sys_root"), K_PATH, RT_CFG_SYS_ROOT, F(sys_root), 0, 0, CLI_ONLY, "/sys", RESTART},
    {TOP("user_mode"), K_BOOL, RT_CFG_USER_MODE, F(user_mode), 0, 0, CLI_ONLY, "false", RESTART},
    {TOP("exit_on_idle"), K_SECS_UINT, RT_CFG_EXIT_ON_IDLE, F(exit_on_idle_secs), 0, 7 * DAY, CLI_ONLY, "0",
     RESTART},
};

const size_t rt_config_nkeys = RT_ARRAY_SIZE(rt_config_keys);
_Static_assert(RT_ARRAY_SIZE(rt_config_keys) <= RT_CONFIG_MAX_KEYS, "raise RT_CONFIG_MAX_KEYS");

const char *const rt_config_groups[] = {"retention", "limits", "cgroups", "upload", "notes", "notify", "gpu", "adopt"};
const size_t rt_config_ngroups = RT_ARRAY_SIZE(rt_config_groups);
