/* The request path: bytes a client sends on the control socket, through the
 * framing, the JSON parser, the dispatcher, the method tables and the
 * handlers, to the replies. A real server on a real socket (as
 * tests/unit/test_dispatch.c), with a sampler that is never started, empty
 * /proc and /sys roots (no process exists), and a few ended jobs with stored
 * samples to list, show and page through.
 *
 * The first byte of an input says what comes with the bytes: bit 0 a
 * descriptor (/dev/null) sent with them (SCM_RIGHTS), bit 1 the client half-
 * closes after sending. The rest is what the client sends. */
#include "api/api.h"
#include "collect/host_sampler.h"
#include "daemon.h"
#include "fuzz_tree.h"
#include "rt/sample_json.h"
#include "rt/util.h"
#include "rt/varlink.h"
#include "store/buf.h"
#include "system/listen.h"
#include "system/log.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

static struct {
    struct rt_daemon d;
    int epfd;
    char dir[256], sock[300];
} F;

/* Ended jobs 1..3 (job 2 named "eval", owned by another user) with samples,
 * written as a daemon before the sample store left them (job.json and
 * samples.jsonl) and loaded: the store moves them into its own files. */
static void write_file(const char *path, const char *txt, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, txt, len) != (ssize_t)len)
        abort();
    close(fd);
}

static void add_jobs(void)
{
    struct rt_roots roots;
    char proc[512], sys[512];
    snprintf(proc, sizeof(proc), "%s/host/proc", RT_FUZZ_FIXTURES);
    snprintf(sys, sizeof(sys), "%s/host/sys", RT_FUZZ_FIXTURES);
    if (rt_roots_open(&roots, proc, sys) < 0)
        abort();
    struct rt_host_sampler *h = rt_host_sampler_new(&roots, 1.0);
    struct rt_sample s;
    rt_sample_init(&s);
    rt_host_sampler_collect(h, &s);
    for (uint64_t id = 1; id <= 3; id++) {
        struct rt_job *j = rt_job_new();
        j->id = id;
        j->owner_uid = id == 2 ? 4242 : 0;
        j->name = id == 2 ? rt_xstrdup("eval") : NULL;
        j->state = RT_JOB_FINISHED;
        j->started_at = 1000.0 * (double)id;
        j->ended_at = j->started_at + 5;
        j->interval_secs = 1;
        j->summary.samples = 5 * id;
        char dir[600], path[700];
        snprintf(dir, sizeof(dir), "%s/state/jobs/%llu", F.dir, (unsigned long long)id);
        if (mkdir(dir, 0700) < 0)
            abort();
        struct json_object *rec = rt_job_to_record(j);
        struct json_object *md = json_object_new_object();
        json_object_object_add(md, "team", json_object_new_string("fuzz"));
        json_object_object_add(rec, "metadata", md);
        size_t len;
        const char *txt = json_object_to_json_string_length(rec, RT_VL_JSON_FLAGS, &len);
        snprintf(path, sizeof(path), "%s/job.json", dir);
        write_file(path, txt, len);
        json_object_put(rec);
        struct rt_buf lines = {0};
        s.has_job = true;
        s.tracked_pid = 4242;
        s.job = (struct rt_job_figures){.child_count = 2, .cores_used = 1.5, .rss_bytes = 10 * RT_MIB,
                                        .pss_bytes = 8 * RT_MIB};
        s.job_id = id;
        s.job_name = j->name;
        for (uint64_t k = 0; k < 5 * id; k++) {
            s.timestamp_ms = (uint64_t)(j->started_at + (double)k) * 1000;
            s.timestamp_secs = s.timestamp_ms / 1000;
            struct json_object *o = rt_sample_to_json(&s);
            rt_sample_json_set_job(o, &s);
            txt = json_object_to_json_string_length(o, RT_VL_JSON_FLAGS, &len);
            rt_buf_put(&lines, txt, len);
            rt_buf_put(&lines, "\n", 1);
            json_object_put(o);
        }
        snprintf(path, sizeof(path), "%s/samples.jsonl", dir);
        write_file(path, (const char *)lines.p, lines.len);
        rt_buf_free(&lines);
        rt_job_free(j);
    }
    rt_sample_free(&s);
    rt_host_sampler_free(h);
    rt_roots_close(&roots);
    if (rt_state_dir_load(&F.d.state, &F.d.jobs) != 3)
        abort();
}

static void cleanup(void)
{
    rt_server_free(F.d.server);
    rt_sampler_free(F.d.sampler);
    close(F.epfd);
    close(F.d.listen_fd);
    rt_state_dir_close(&F.d.state);
    rt_jobs_free(&F.d.jobs);
    rt_roots_close(&F.d.roots);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    rt_log_init(RT_LOG_STDERR, LOG_CRIT); /* the daemon's notices are not the fuzzer's output */
    rt_strlcpy(F.dir, rt_fuzz_workdir("rt-fuzz-request"), sizeof(F.dir));
    char path[512], err[512];
    rt_config_defaults(&F.d.cfg);
    F.d.cfg.message_timeout_secs = 1;
    rt_jobs_init(&F.d.jobs);
    snprintf(path, sizeof(path), "%s/state", F.dir);
    if (rt_state_dir_open(&F.d.state, path, true, err, sizeof(err)) < 0)
        abort();
    char proc[512], sys[512];
    snprintf(proc, sizeof(proc), "%s/proc", F.dir);
    snprintf(sys, sizeof(sys), "%s/sys", F.dir);
    if (mkdir(proc, 0755) < 0 || mkdir(sys, 0755) < 0 || rt_roots_open(&F.d.roots, proc, sys) < 0)
        abort();
    add_jobs();
    struct rt_sampler_opts so = {.interval_secs = 1, .roots = &F.d.roots, .disable_gpu = true};
    F.d.sampler = rt_sampler_new(&so, &F.d.jobs, &F.d.state);
    snprintf(F.sock, sizeof(F.sock), "%s/sock", F.dir);
    F.d.listen_fd = rt_listen_unix(F.sock, -1, 0600, err, sizeof(err));
    F.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (F.d.listen_fd < 0 || F.epfd < 0 || !(F.d.server = rt_server_new(&F.d, F.d.listen_fd, F.epfd)))
        abort();
    atexit(cleanup);
    return 0;
}

/* One round of the main loop, without blocking. */
static void serve(void)
{
    struct epoll_event evs[16];
    int n = epoll_wait(F.epfd, evs, 16, 0);
    for (int i = 0; i < n; i++)
        rt_server_event(F.d.server, evs[i].data.ptr, evs[i].events);
    rt_server_settle(F.d.server);
}

/* Read what the server sent; false at EOF or on an error. */
static bool drain(int fd, size_t *got)
{
    char buf[65536];
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0) {
            *got += (size_t)n;
            continue;
        }
        return n < 0 && (errno == EAGAIN || errno == EINTR);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t how = data[0];
    data++;
    size--;
    struct rt_vl_client c;
    if (rt_vl_client_connect(&c, F.sock) < 0)
        abort();
    rt_vl_reader_free(&c.rd);
    fcntl(c.fd, F_SETFL, O_NONBLOCK);
    int devnull = (how & 1) ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;
    size_t sent = 0, got = 0;
    bool open_ = true;
    /* Send, serving meanwhile; then serve until the replies stop. */
    for (int idle = 0; open_ && idle < 8;) {
        if (sent < size) {
            union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
            } ctl;
            struct iovec iov = {.iov_base = (void *)(data + sent), .iov_len = size - sent};
            struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
            if (sent == 0 && devnull >= 0) {
                memset(&ctl, 0, sizeof(ctl));
                mh.msg_control = ctl.buf;
                mh.msg_controllen = sizeof(ctl.buf);
                struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(cm), &devnull, sizeof(int));
            }
            ssize_t n = sendmsg(c.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n > 0)
                sent += (size_t)n;
            else if (n < 0 && errno != EAGAIN)
                sent = size; /* the server hung up */
            if (sent == size && (how & 2))
                shutdown(c.fd, SHUT_WR);
        }
        size_t before = got;
        serve();
        open_ = drain(c.fd, &got);
        idle = got == before && sent == size ? idle + 1 : 0;
    }
    if (devnull >= 0)
        close(devnull);
    rt_vl_client_close(&c);
    /* The server notices the close; a stream or a wait ends with it. */
    for (int i = 0; i < 100 && rt_server_connections(F.d.server); i++) {
        poll(NULL, 0, i < 10 ? 0 : 1);
        serve();
    }
    if (rt_server_connections(F.d.server))
        abort(); /* a connection the server never let go of */
    return 0;
}
