/* GetJobProcesses: a running job's processes as /proc shows them now, for
 * top's drill-down. Read here on the main thread from the job's root (and
 * its reaper's children) or its cgroup: the sampler keeps no per-process
 * list that another thread may read, and a look at a few processes on a
 * key press costs less than keeping one. The job is the caller's to see
 * (rt_api_lookup_job); a process of another user in it shows its command
 * only to administrators, as /proc with hidepid would hide it. */
#include "api/call.h"
#include "api/job_access.h"
#include "api/methods.h"
#include "daemon.h"
#include "proc/procfs.h"
#include "rt/json.h"
#include "rt/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A reply's processes at most (truncated beyond): four reads each on the
 * main loop, which every caller shares. */
#define PROCS_MAX 256
#define CMDLINE_MAX 4096

/* What the job's processes are found from, copied under the registry lock. */
struct target {
    int32_t pid, reaper_pid;
    uint64_t starttime, reaper_starttime;
    char *cgroup;
};

struct pidset {
    int32_t *v;
    size_t n, cap;
    bool truncated;
};

static bool has(const struct pidset *s, int32_t pid)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] == pid)
            return true;
    return false;
}

/* The root's tree, and whatever the reaper adopted from it: the processes
 * the sampler counts (proc/ptree.h), the reaper itself left out. */
static void tree_pids(int proc_fd, const struct target *t, struct pidset *s)
{
    int32_t *stack = NULL;
    size_t sp = 0, cap = 0;
    struct rt_pstat st;
    if (t->pid > 0 && rt_pstat_read(proc_fd, t->pid, &st) == 0 && st.starttime == t->starttime) {
        s->v[s->n++] = t->pid;
        rt_pchildren_read(proc_fd, t->pid, st.num_threads, &stack, &sp, &cap);
    }
    if (t->reaper_pid > 0 && rt_pstat_read(proc_fd, t->reaper_pid, &st) == 0 &&
        st.starttime == t->reaper_starttime)
        rt_pchildren_read(proc_fd, t->reaper_pid, st.num_threads, &stack, &sp, &cap);
    while (sp) {
        int32_t pid = stack[--sp];
        if (has(s, pid) || rt_pstat_read(proc_fd, pid, &st) < 0)
            continue;
        if (s->n == PROCS_MAX) {
            s->truncated = true;
            break;
        }
        s->v[s->n++] = pid;
        rt_pchildren_read(proc_fd, pid, st.num_threads, &stack, &sp, &cap);
    }
    free(stack);
}

static void cgroup_pids(const struct rt_cg_host *h, const char *path, struct pidset *s)
{
    struct rt_cgroup cg;
    if (rt_cgroup_open(&cg, h, path) < 0)
        return; /* gone: the job is ending */
    size_t n = 0;
    s->truncated = rt_cgroup_pids(&cg, (pid_t *)s->v, PROCS_MAX, &n) == -E2BIG;
    s->n = n;
    rt_cgroup_close(&cg);
}

/* argv joined by spaces (valid UTF-8, other bytes as \xHH); "[comm]" for a
 * process without one (a kernel thread, a zombie). NULL when gone. */
static struct json_object *command(int proc_fd, int32_t pid)
{
    char path[40], buf[CMDLINE_MAX];
    snprintf(path, sizeof(path), "%d/cmdline", (int)pid);
    ssize_t len = rt_read_file_at(proc_fd, path, buf, sizeof(buf));
    while (len > 0 && buf[len - 1] == '\0')
        len--;
    if (len <= 0) {
        snprintf(path, sizeof(path), "%d/comm", (int)pid);
        char comm[32];
        ssize_t k = rt_read_file_at(proc_fd, path, comm, sizeof(comm));
        if (k < 0)
            return NULL;
        comm[strcspn(comm, "\n")] = '\0';
        len = snprintf(buf, sizeof(buf), "[%s]", comm);
    }
    for (ssize_t i = 0; i < len; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    char *text = rt_utf8_escape(buf, (size_t)len);
    struct json_object *o = json_object_new_string(text);
    free(text);
    return o;
}

/* One process, or NULL when it went meanwhile. */
static struct json_object *process(int proc_fd, const struct rt_peer *peer, int32_t pid)
{
    struct rt_pstat st;
    struct rt_pcreds creds;
    if (rt_pstat_read(proc_fd, pid, &st) < 0 || rt_pcreds_read(proc_fd, pid, &creds) < 0)
        return NULL;
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "pid", json_object_new_int64(pid));
    json_object_object_add(o, "ppid", json_object_new_int64(st.ppid));
    json_object_object_add(o, "uid", json_object_new_int64(creds.uid[0]));
    json_object_object_add(o, "state", json_object_new_string_len(&st.state, 1));
    json_object_object_add(o, "cpu_secs", rt_json_double((double)(st.utime + st.stime) / (double)rt_clk_tck(), 2));
    json_object_object_add(o, "rss_bytes", rt_json_u64(st.rss_pages * (uint64_t)rt_page_size()));
    bool shown = peer->admin || creds.uid[0] == peer->uid;
    json_object_object_add(o, "command", shown ? command(proc_fd, pid) : NULL);
    return o;
}

static int by_pid(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void m_get_job_processes(struct rt_call *c)
{
    struct rt_daemon *d = rt_call_daemon(c);
    struct rt_job *j = rt_api_lookup_job(c);
    if (!j)
        return;
    uint64_t id = j->id;
    bool running = j->state == RT_JOB_RUNNING;
    struct target t = {j->pid, j->reaper_pid, j->starttime, j->reaper_starttime,
                       j->cgroup ? rt_xstrdup(j->cgroup) : NULL};
    rt_jobs_unlock(&d->jobs);
    if (!running) {
        free(t.cgroup);
        struct json_object *p = json_object_new_object();
        json_object_object_add(p, "id", rt_json_u64(id));
        rt_call_error(c, RT_E_PREFIX "JobNotRunning", p);
        return;
    }
    struct pidset s = {.v = rt_xmalloc(PROCS_MAX * sizeof(int32_t)), .cap = PROCS_MAX};
    if (t.cgroup)
        cgroup_pids(&d->cg_host, t.cgroup, &s);
    else
        tree_pids(d->roots.proc_fd, &t, &s);
    qsort(s.v, s.n, sizeof(*s.v), by_pid);
    struct json_object *procs = json_object_new_array();
    for (size_t i = 0; i < s.n; i++) {
        struct json_object *o = process(d->roots.proc_fd, rt_call_peer(c), s.v[i]);
        if (o)
            json_object_array_add(procs, o);
    }
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "processes", procs);
    json_object_object_add(p, "truncated", json_object_new_boolean(s.truncated));
    free(s.v);
    free(t.cgroup);
    rt_call_reply(c, p);
}

static const struct rt_method methods[] = {
    {.name = "GetJobProcesses", .fn = m_get_job_processes, .params = {RT_API_JOB_PARAMS}},
};

const struct rt_method_table rt_proc_methods = {RT_VL_INTERFACE, methods, RT_ARRAY_SIZE(methods)};
