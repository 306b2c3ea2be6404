/* The daemon's shared context and its main loop. */
#ifndef RT_DAEMON_H
#define RT_DAEMON_H

#include "facts/cloud.h"
#include "facts/hostinfo.h"
#include "collect/roots.h"
#include "cgroup/hier.h"
#include "config/config.h"
#include "jobs/jobs.h"
#include "sampler/sampler.h"
#include "jobs/state_dir.h"

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

struct rt_server;
struct rt_upload_worker;
struct rt_noticer;

struct rt_daemon {
    struct rt_config cfg;
    char config_path[PATH_MAX];     /* "" when none */
    struct rt_config_overrides overrides; /* command-line flags, re-applied on reload */
    struct rt_roots roots;
    struct rt_cg_host cg_host;      /* the host's cgroup hierarchies (mode NONE: none) */
    struct rt_state_dir state;
    struct rt_jobs jobs;
    struct rt_sampler *sampler;
    struct rt_server *server;
    struct rt_upload_worker *upload;  /* NULL when the spool cannot be used */
    struct rt_noticer *notice;        /* notifications at the end of jobs; NULL when it cannot run */
    struct rt_host_info host;         /* for Sentinel runs; read-only after start */
    struct rt_cloud_discovery *cloud; /* started on first use: rt_daemon_cloud() */
    pthread_mutex_t cloud_lock;
    bool has_default_token;           /* the upload worker has a default token */
    uint64_t start_mono_ns;
    char hostname[256];
    bool has_admin_gid;
    gid_t admin_gid;
    char log_file[PATH_MAX];        /* --log-file, "" when none */
    char state_fallback[PATH_MAX];  /* user mode: where state goes when the home's cannot */
    int listen_fd;
    bool socket_activated;
    volatile bool quit;
    char stop_reason[32];
    bool idle_upload_noted;    /* "idle, but uploads are pending" logged */
    size_t adopt_cursor;       /* where adopt_jobs's next scan begins looking (daemon.c) */
};

/* Cloud discovery, started on the first call from any thread (the upload
 * worker before a POST /runs, GetHostInfo): a daemon that is never asked
 * never probes. */
struct rt_cloud_discovery *rt_daemon_cloud(struct rt_daemon *d);
/* The host facts with the GPUs of the latest host sample. */
void rt_daemon_host_info(struct rt_daemon *d, struct rt_host_info *out);

/* Run until SIGTERM/SIGINT (or idle exit). Returns the process exit code. */
int rt_daemon_run(struct rt_daemon *d);

#endif
