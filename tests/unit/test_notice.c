/* Notifications at the end of a job: targets (webhook URLs, mailto:) and
 * their redaction, the message, and the worker against a webhook receiver
 * on loopback and a sendmail stand-in: delivered, retried with backoff,
 * refused for good, logged once without the URL's secret, bounded at stop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fixture.h"
#include "notice/defaults.h"
#include "notice/message.h"
#include "notice/notice.h"
#include "notice/target.h"
#include "rt/json.h"
#include "system/http_global.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <syslog.h>

static void test_targets(void **state)
{
    (void)state;
    char why[256];
    static const char *const ok_hooks[] = {"https://hooks.slack.com/services/T0/B0/XyZ", "http://127.0.0.1:8080/h",
                                           "HTTPS://example.org", "https://user:pw@example.org/x?y=1#z"};
    for (size_t i = 0; i < RT_ARRAY_SIZE(ok_hooks); i++)
        assert_int_equal(rt_notice_target_check(ok_hooks[i], why, sizeof(why)), RT_NOTICE_WEBHOOK);
    static const char *const ok_mail[] = {"mailto:alice", "mailto:alice.b+jobs@lab.example.org", "MAILTO:x-y_z@a.b"};
    for (size_t i = 0; i < RT_ARRAY_SIZE(ok_mail); i++)
        assert_int_equal(rt_notice_target_check(ok_mail[i], why, sizeof(why)), RT_NOTICE_MAIL);
    static const char *const bad[] = {
        "", "ftp://example.org/x", "file:///etc/passwd", "https://", "https:///path", "https://a b",
        "https://a\nb", "mailto:", "mailto:-oQ/tmp/x@evil", "mailto:a@b,c@d", "mailto:a b@c", "mailto:a@b\nBcc: c",
        "mailto:a@-b", "mailto:a@b..c", "mailto:a?subject=x", "mailto:.a@b", "alice@example.org", "gopher://x",
    };
    for (size_t i = 0; i < RT_ARRAY_SIZE(bad); i++)
        if (rt_notice_target_check(bad[i], why, sizeof(why)) != -EINVAL)
            fail_msg("target '%s' accepted", bad[i]);
    char long_url[RT_NOTICE_TARGET_MAX + 16] = "https://x/";
    memset(long_url + 10, 'a', sizeof(long_url) - 11);
    long_url[sizeof(long_url) - 1] = '\0';
    assert_int_equal(rt_notice_target_check(long_url, why, sizeof(why)), -EINVAL);

    char shown[128];
    rt_notice_target_redact("https://hooks.slack.com/services/T0/B0/XyZ", shown, sizeof(shown));
    assert_string_equal(shown, "https://hooks.slack.com/…");
    rt_notice_target_redact("https://user:pw@example.org:8443?token=1", shown, sizeof(shown));
    assert_string_equal(shown, "https://example.org:8443/…");
    rt_notice_target_redact("mailto:alice@example.org", shown, sizeof(shown));
    assert_string_equal(shown, "mailto:alice@example.org");
}

static void test_which_targets(void **state)
{
    (void)state;
    struct json_object *own = json_tokener_parse("[\"mailto:own\"]"), *mine = json_tokener_parse("[\"mailto:mine\"]");
    struct json_object *none = json_object_new_array();
    struct json_object *t = rt_notice_targets_for(own, mine, true, "mailto:%u", true, true);
    assert_ptr_equal(t, own); /* the job's own first */
    json_object_put(t);
    t = rt_notice_targets_for(none, mine, true, "mailto:%u", true, true);
    assert_ptr_equal(t, mine); /* then its owner's */
    json_object_put(t);
    /* then, adopted only, the administrator's: every job, or failed or noted ones */
    t = rt_notice_targets_for(NULL, NULL, true, "mailto:%u", false, true);
    assert_string_equal(rt_json_plain(t), "[\"mailto:%u\"]");
    json_object_put(t);
    assert_null(rt_notice_targets_for(NULL, NULL, true, "mailto:%u", false, false));
    t = rt_notice_targets_for(NULL, none, true, "mailto:%u", true, false);
    assert_non_null(t);
    json_object_put(t);
    assert_null(rt_notice_targets_for(NULL, NULL, false, "mailto:%u", true, true)); /* run's: not adopted */
    assert_null(rt_notice_targets_for(NULL, NULL, true, "", true, true));
    json_object_put(own);
    json_object_put(mine);
    json_object_put(none);

    char out[64];
    assert_true(rt_notice_target_expand("mailto:%u@lab.example.org", "alice", out, sizeof(out)));
    assert_string_equal(out, "mailto:alice@lab.example.org");
    assert_true(rt_notice_target_expand("https://h/%u/x%u", "b", out, sizeof(out)));
    assert_string_equal(out, "https://h/b/xb");
    assert_false(rt_notice_target_expand("mailto:%u", "a-very-long-user-name-that-does-not-fit-here-at-all", out, 24));
}

static const char *job_text =
    "{\"id\":42,\"name\":\"train\",\"owner_uid\":1000,\"state\":\"failed\",\"exit_code\":137,\"signal\":9,"
    "\"summary\":{\"duration_secs\":3725.0,\"cpu_secs\":7077.5,\"avg_cores\":1.9,\"peak_cores\":3.2,"
    "\"peak_rss_bytes\":16106127360,\"gpu_avg_usage\":null},"
    "\"request\":{\"cpus\":8.0,\"memory_bytes\":107374182400},"
    "\"efficiency\":{\"cpu_pct\":23.8,\"memory_pct\":15.0,\"gpu_pct\":null},"
    "\"notes\":[{\"id\":\"cpu_efficiency\",\"text\":\"CPU efficiency 24%: asked for 8 CPUs, used 1.9 on average. "
    "Ask for 2 (cpus=2).\",\"suggest\":{\"cpus\":2}}]}";

static void test_message(void **state)
{
    (void)state;
    struct json_object *job = json_tokener_parse(job_text);
    struct rt_notice_msg m;
    rt_notice_compose(job, "gpu01", "alice", &m);
    assert_string_equal(m.subject, "Job 42 (train) failed (killed by signal 9) on gpu01: 1 note");
    assert_string_equal(m.text, "Job 42 (train) of alice failed (killed by signal 9) on gpu01 after 1 h 02 min.\n"
                                "CPU: 7077.5 s, 1.90 cores on average, 3.20 at the peak; efficiency 24% of 8 CPUs\n"
                                "Memory: 15.0 GiB at the peak; efficiency 15% of 100.0 GiB\n"
                                "Notes:\n"
                                "- CPU efficiency 24%: asked for 8 CPUs, used 1.9 on average. Ask for 2 (cpus=2).\n");
    struct json_object *body = json_tokener_parse(m.json);
    assert_string_equal(rt_json_get_string(body, "text"), m.text); /* what Slack shows */
    assert_string_equal(rt_json_get_string(body, "host"), "gpu01");
    assert_true(json_object_equal(rt_json_get_object(body, "job"), job));
    json_object_put(body);
    rt_notice_msg_free(&m);

    /* a Slurm job, nothing asked for, no notes, an unknown owner */
    struct json_object *slurm = json_tokener_parse(
        "{\"id\":7,\"name\":null,\"owner_uid\":1001,\"state\":\"finished\",\"exit_code\":0,"
        "\"summary\":{\"duration_secs\":12.25,\"cpu_secs\":1,\"avg_cores\":0.08,\"peak_cores\":1,"
        "\"peak_rss_bytes\":1048576,\"gpu_avg_usage\":0.5},\"scheduler\":{\"kind\":\"slurm\",\"job_id\":1234},"
        "\"notes\":[]}");
    rt_notice_compose(slurm, "n1", NULL, &m);
    assert_string_equal(m.subject, "Slurm job 1234 (tracked as job 7) finished on n1");
    assert_string_equal(m.text, "Slurm job 1234 (tracked as job 7) of uid 1001 finished on n1 after 12.2 s.\n"
                                "CPU: 1.0 s, 0.08 cores on average, 1.00 at the peak\n"
                                "Memory: 1.0 MiB at the peak\n"
                                "GPU: 0.50 GPUs in use on average\n");
    rt_notice_msg_free(&m);
    json_object_put(slurm);
    json_object_put(job);
}

/* ---- a webhook receiver on loopback ---- */

#define MAX_REQ 8

struct receiver {
    int fd, port;
    pthread_t thread;
    int statuses[MAX_REQ];          /* what to answer, in turn (then 200) */
    pthread_mutex_t mu;
    int n;                          /* requests seen */
    char *bodies[MAX_REQ], *paths[MAX_REQ], *types[MAX_REQ];
    uint64_t at_ms[MAX_REQ];
};

static char *header(const char *req, const char *name)
{
    const char *p = strcasestr(req, name);
    if (!p)
        return NULL;
    p += strlen(name);
    while (*p == ' ')
        p++;
    return strndup(p, strcspn(p, "\r\n"));
}

static void *receive(void *arg)
{
    struct receiver *r = arg;
    for (;;) {
        int c = accept(r->fd, NULL, NULL);
        if (c < 0)
            return NULL;
        char buf[65536];
        size_t len = 0;
        char *end = NULL;
        long want = -1;
        for (;;) {
            ssize_t k = recv(c, buf + len, sizeof(buf) - 1 - len, 0);
            if (k <= 0)
                break;
            len += (size_t)k;
            buf[len] = '\0';
            if (!end && (end = strstr(buf, "\r\n\r\n"))) {
                char *cl = header(buf, "Content-Length:");
                want = cl ? atol(cl) : 0;
                free(cl);
            }
            if (end && (long)(len - (size_t)(end + 4 - buf)) >= want)
                break;
        }
        pthread_mutex_lock(&r->mu);
        int i = r->n < MAX_REQ ? r->n++ : MAX_REQ - 1;
        int status = r->statuses[i] ? r->statuses[i] : 200;
        if (end) {
            r->bodies[i] = strdup(end + 4);
            r->paths[i] = strndup(buf, strcspn(buf, "\r\n"));
            r->types[i] = header(buf, "Content-Type:");
        }
        r->at_ms[i] = rt_mono_ns() / 1000000;
        pthread_mutex_unlock(&r->mu);
        char reply[128];
        int n = snprintf(reply, sizeof(reply), "HTTP/1.1 %d X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                         status);
        send(c, reply, (size_t)n, MSG_NOSIGNAL);
        close(c);
    }
}

static void receiver_start(struct receiver *r, const int *statuses, size_t n)
{
    memset(r, 0, sizeof(*r));
    memcpy(r->statuses, statuses, n * sizeof(*statuses));
    pthread_mutex_init(&r->mu, NULL);
    r->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    assert_int_equal(bind(r->fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(r->fd, 8), 0);
    getsockname(r->fd, (struct sockaddr *)&a, &al);
    r->port = ntohs(a.sin_port);
    pthread_create(&r->thread, NULL, receive, r);
}

static int receiver_count(struct receiver *r)
{
    pthread_mutex_lock(&r->mu);
    int n = r->n;
    pthread_mutex_unlock(&r->mu);
    return n;
}

static void receiver_stop(struct receiver *r)
{
    shutdown(r->fd, SHUT_RDWR);
    pthread_join(r->thread, NULL);
    close(r->fd);
    for (int i = 0; i < MAX_REQ; i++) {
        free(r->bodies[i]);
        free(r->paths[i]);
        free(r->types[i]);
    }
    pthread_mutex_destroy(&r->mu);
}

static void wait_done(struct rt_noticer *n)
{
    for (int i = 0; i < 1000 && rt_noticer_pending(n); i++)
        usleep(10000);
    assert_int_equal(rt_noticer_pending(n), 0);
}

static struct rt_noticer *noticer(const char *sendmail)
{
    struct rt_notice_config c = {.sendmail = sendmail, .host = "gpu01", .attempts = 3, .backoff_base_ms = 50,
                                 .backoff_max_ms = 80, .timeout_ms = 2000};
    struct rt_noticer *n = rt_noticer_new(&c);
    assert_non_null(n);
    return n;
}

static void test_webhook_retried_then_delivered(void **state)
{
    (void)state;
    struct receiver r;
    const int statuses[] = {503, 500};
    receiver_start(&r, statuses, 2);
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/hooks/SECRET-TOKEN", r.port);
    struct json_object *job = json_tokener_parse(job_text);
    struct rt_noticer *n = noticer(NULL);
    fx_capture_start();
    const char *targets[] = {url};
    assert_int_equal(rt_noticer_send(n, job, 0, targets, 1), 0);
    wait_done(n);
    char *log = fx_capture_end();
    assert_int_equal(receiver_count(&r), 3);
    /* waits of 50 ms, then 80 (doubling, capped) */
    assert_true(r.at_ms[1] - r.at_ms[0] >= 50);
    assert_true(r.at_ms[2] - r.at_ms[1] >= 80);
    assert_string_equal(r.paths[2], "POST /hooks/SECRET-TOKEN HTTP/1.1");
    assert_string_equal(r.types[2], "application/json");
    struct json_object *body = json_tokener_parse(r.bodies[2]);
    assert_non_null(body);
    assert_true(json_object_equal(rt_json_get_object(body, "job"), job));
    assert_non_null(strstr(rt_json_get_string(body, "text"), "CPU efficiency 24%"));
    json_object_put(body);
    assert_null(strstr(log, "SECRET")); /* nothing logged with the URL: delivered */
    free(log);
    rt_noticer_free(n);
    json_object_put(job);
    receiver_stop(&r);
}

static void test_webhook_failures_logged_once(void **state)
{
    (void)state;
    struct receiver r;
    const int statuses[] = {404, 500, 500, 500};
    receiver_start(&r, statuses, 4);
    char refused[128], failing[128];
    snprintf(refused, sizeof(refused), "http://127.0.0.1:%d/gone/SECRET-ONE", r.port);
    snprintf(failing, sizeof(failing), "http://127.0.0.1:%d/down/SECRET-TWO", r.port);
    struct json_object *job = json_tokener_parse(job_text);
    struct rt_noticer *n = noticer(NULL);
    fx_capture_start();
    const char *first[] = {refused};
    assert_int_equal(rt_noticer_send(n, job, 0, first, 1), 0);
    wait_done(n); /* 404: not tried again */
    assert_int_equal(receiver_count(&r), 1);
    const char *second[] = {failing};
    assert_int_equal(rt_noticer_send(n, job, 0, second, 1), 0);
    wait_done(n); /* 500 three times: the attempts are bounded */
    char *log = fx_capture_end();
    assert_int_equal(receiver_count(&r), 4);
    char expect[256];
    snprintf(expect, sizeof(expect),
             "notice: job 42: cannot tell http://127.0.0.1:%d/… after 1 attempt: HTTP 404\n", r.port);
    assert_non_null(strstr(log, expect));
    snprintf(expect, sizeof(expect),
             "notice: job 42: cannot tell http://127.0.0.1:%d/… after 3 attempts: HTTP 500\n", r.port);
    assert_non_null(strstr(log, expect));
    assert_null(strstr(log, "SECRET"));
    char *second_line = strstr(log, "after 3 attempts");
    assert_null(strstr(second_line + 1, "after 3 attempts")); /* once */
    free(log);
    rt_noticer_free(n);
    json_object_put(job);
    receiver_stop(&r);
}

/* ---- a sendmail stand-in ---- */

static char tmp[64];

static char *standin(const char *script)
{
    snprintf(tmp, sizeof(tmp), "/tmp/rt-notice-XXXXXX");
    assert_non_null(mkdtemp(tmp));
    char *path = rt_xasprintf("%s/sendmail", tmp), *body = rt_xasprintf("#!/bin/sh\n%s\n", script);
    fx_write(tmp, "sendmail", body);
    free(body);
    assert_int_equal(chmod(path, 0755), 0);
    return path;
}

static char *slurp(const char *path)
{
    char buf[16384];
    ssize_t n = rt_read_file_at(AT_FDCWD, path, buf, sizeof(buf));
    return n >= 0 ? rt_xstrdup(buf) : NULL;
}

static void test_mail(void **state)
{
    (void)state;
    /* the first run fails for now (EX_TEMPFAIL), the second delivers */
    char *sm = standin("d=$(dirname \"$0\"); n=$(ls \"$d\" | grep -c '^mail'); echo \"$@\" > \"$d/args$n\"; "
                       "env > \"$d/env$n\"; cat > \"$d/mail$n\"; [ \"$n\" -gt 0 ] || exit 75");
    struct json_object *job = json_tokener_parse(job_text);
    struct rt_noticer *n = noticer(sm);
    const char *targets[] = {"mailto:alice@lab.example.org"};
    assert_int_equal(rt_noticer_send(n, job, 0, targets, 1), 0);
    wait_done(n);
    char *p = rt_xasprintf("%s/mail1", tmp), *mail = slurp(p), *args, *env;
    free(p);
    assert_non_null(mail);
    assert_true(rt_str_starts_with(mail, "To: alice@lab.example.org\n"
                                         "Subject: [resource-tracker] Job 42 (train) failed (killed by signal 9) on "
                                         "gpu01: 1 note\nAuto-Submitted: auto-generated\n"));
    assert_non_null(strstr(mail, "\n\nJob 42 (train) of root failed"));
    assert_non_null(strstr(mail, "- CPU efficiency 24%: asked for 8 CPUs"));
    p = rt_xasprintf("%s/args1", tmp);
    args = slurp(p);
    free(p);
    assert_string_equal(args, "-t -oi\n"); /* the address only in the header */
    p = rt_xasprintf("%s/env1", tmp);
    env = slurp(p);
    free(p);
    assert_null(strstr(env, "RT_FIXTURES")); /* not the daemon's environment */
    free(args);
    free(env);
    free(mail);
    rt_noticer_free(n);

    /* "%u": the job's owner by name (uid 0 here), expanded on the worker */
    n = noticer(sm);
    const char *tmpl[] = {"mailto:%u"};
    assert_int_equal(rt_noticer_send(n, job, 0, tmpl, 1), 0);
    wait_done(n);
    rt_noticer_free(n);
    p = rt_xasprintf("%s/mail2", tmp);
    mail = slurp(p);
    free(p);
    assert_non_null(mail);
    assert_true(rt_str_starts_with(mail, "To: root\n"));
    free(mail);
    free(sm);

    /* a permanent failure (EX_NOUSER) is logged once, not retried */
    char *dir = rt_xstrdup(tmp);
    sm = standin("cat >/dev/null; echo x >> \"$(dirname \"$0\")/runs\"; exit 67");
    n = noticer(sm);
    fx_capture_start();
    assert_int_equal(rt_noticer_send(n, job, 0, targets, 1), 0);
    wait_done(n);
    char *log = fx_capture_end();
    p = rt_xasprintf("%s/runs", tmp);
    char *runs = slurp(p);
    free(p);
    assert_string_equal(runs, "x\n");
    assert_non_null(strstr(log, "cannot tell mailto:alice@lab.example.org after 1 attempt: "));
    assert_non_null(strstr(log, "exited with status 67"));
    free(runs);
    free(log);
    rt_noticer_free(n);
    free(sm);
    fx_rmtree(rt_xstrdup(tmp));
    fx_rmtree(dir);
    json_object_put(job);
}

static void test_stop_is_bounded(void **state)
{
    (void)state;
    /* a sendmail that hangs, and a webhook nobody answers: the stop's
     * budget holds, and what is left is dropped with one line */
    char *sm = standin("sleep 30");
    struct receiver r;
    const int statuses[] = {503, 503, 503, 503};
    receiver_start(&r, statuses, 4);
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/x", r.port);
    struct json_object *job = json_tokener_parse(job_text);
    struct rt_notice_config c = {.sendmail = sm, .host = "h", .attempts = 10, .backoff_base_ms = 60000,
                                 .timeout_ms = 60000};
    struct rt_noticer *n = rt_noticer_new(&c);
    const char *targets[] = {"mailto:bob", url};
    fx_capture_start();
    assert_int_equal(rt_noticer_send(n, job, 0, targets, 2), 0);
    usleep(300000);
    uint64_t t0 = rt_mono_ns();
    rt_noticer_stop(n, 500);
    double secs = (double)(rt_mono_ns() - t0) / 1e9;
    char *log = fx_capture_end();
    assert_true(secs < 2.0);
    assert_int_equal(rt_noticer_pending(n), 0);
    assert_non_null(strstr(log, "notice: job 42: cannot tell"));
    free(log);
    rt_noticer_free(n);
    json_object_put(job);
    receiver_stop(&r);
    free(sm);
    fx_rmtree(rt_xstrdup(tmp));
}

static void test_queue_is_bounded(void **state)
{
    (void)state;
    struct json_object *job = json_tokener_parse(job_text);
    struct rt_notice_config c = {.sendmail = "/nonexistent/sendmail", .host = "h", .max_pending = 3,
                                 .backoff_base_ms = 60000};
    struct rt_noticer *n = rt_noticer_new(&c);
    const char *targets[] = {"http://127.0.0.1:9/a", "http://127.0.0.1:9/b", "http://127.0.0.1:9/c",
                             "http://127.0.0.1:9/d"};
    fx_capture_start();
    assert_int_equal(rt_noticer_send(n, job, 0, targets, 4), -ENOSPC);
    assert_int_equal(rt_noticer_send(n, job, 0, targets, 4), -ENOSPC);
    char *log = fx_capture_end();
    char *first = strstr(log, "notifications wait already");
    assert_non_null(first);
    assert_null(strstr(first + 1, "notifications wait already")); /* said once */
    free(log);
    rt_noticer_free(n);
    json_object_put(job);
}

static void test_user_defaults(void **state)
{
    (void)state;
    char dir[] = "/tmp/rt-notice-state-XXXXXX";
    assert_non_null(mkdtemp(dir));
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_null(rt_notice_defaults_get(fd, 1000));
    struct json_object *t = json_tokener_parse("[\"https://hooks.example.org/T/secret\",\"mailto:alice\"]");
    assert_int_equal(rt_notice_defaults_set(fd, 1000, t), 0);
    struct json_object *back = rt_notice_defaults_get(fd, 1000);
    assert_true(json_object_equal(back, t));
    json_object_put(back);
    assert_null(rt_notice_defaults_get(fd, 1001)); /* one user's are not another's */
    struct stat st;
    assert_int_equal(fstatat(fd, "notify/1000.json", &st, 0), 0);
    assert_int_equal(st.st_mode & 07777, 0600); /* secrets: root's only */
    assert_int_equal(fstatat(fd, "notify", &st, 0), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    /* a damaged or tampered file gives none */
    fx_write(dir, "notify/1000.json", "{\"targets\":[\"file:///etc/shadow\"]}");
    assert_null(rt_notice_defaults_get(fd, 1000));
    fx_write(dir, "notify/1000.json", "{\"targets\":");
    assert_null(rt_notice_defaults_get(fd, 1000));
    /* cleared */
    assert_int_equal(rt_notice_defaults_set(fd, 1000, t), 0);
    struct json_object *none = json_object_new_array();
    assert_int_equal(rt_notice_defaults_set(fd, 1000, none), 0);
    assert_null(rt_notice_defaults_get(fd, 1000));
    assert_int_equal(rt_notice_defaults_set(fd, 1000, NULL), 0); /* clearing none is fine */
    json_object_put(none);
    json_object_put(t);
    close(fd);
    fx_rmtree(rt_xstrdup(dir));
}

static int setup(void **state)
{
    (void)state;
    rt_log_init(RT_LOG_STDERR, LOG_DEBUG);
    return rt_http_global_init() ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    rt_http_global_cleanup();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_which_targets),
        cmocka_unit_test(test_message),
        cmocka_unit_test(test_webhook_retried_then_delivered),
        cmocka_unit_test(test_webhook_failures_logged_once),
        cmocka_unit_test(test_mail),
        cmocka_unit_test(test_stop_is_bounded),
        cmocka_unit_test(test_queue_is_bounded),
        cmocka_unit_test(test_user_defaults),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
