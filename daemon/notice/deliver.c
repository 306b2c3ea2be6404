#include "notice/deliver.h"

#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

enum rt_deliver_result rt_deliver_webhook(struct rt_http *h, const char *url, const struct rt_notice_msg *msg,
                                          char *error, size_t errlen)
{
    struct rt_http_resp resp;
    rt_http_prepare(h, url, &resp);
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, msg->json);
    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(msg->json));
    int rc = rt_http_perform(h, &resp);
    curl_slist_free_all(hdr);
    long status = resp.status;
    /* "HTTP 503", or curl's message, which names the host at most */
    snprintf(error, errlen, "%s", resp.error);
    rt_http_resp_free(&resp);
    if (rc == 0)
        return RT_DELIVER_OK;
    if (status >= 400 && status < 500 && status != 408 && status != 429)
        return RT_DELIVER_REFUSED;
    return RT_DELIVER_RETRY;
}

static void mail_text(const char *address, const struct rt_notice_msg *msg, char **out, size_t *len)
{
    *out = rt_xasprintf("To: %s\nSubject: [resource-tracker] %s\nAuto-Submitted: auto-generated\n"
                        "MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n"
                        "Content-Transfer-Encoding: 8bit\n\n%s",
                        address, msg->subject, msg->text);
    *len = strlen(*out);
}

/* The time left before the deadline or the abort, in ms (0: none left),
 * at most 100 ms at a time so that an abort set meanwhile is seen. */
static int left_ms(uint64_t deadline_ms, const _Atomic uint64_t *abort_at_ms)
{
    uint64_t now = rt_mono_ns() / 1000000, end = deadline_ms, abort = abort_at_ms ? atomic_load(abort_at_ms) : 0;
    if (abort && abort < end)
        end = abort;
    return now >= end ? 0 : end - now > 100 ? 100 : (int)(end - now);
}

/* Write all of buf to fd before the deadline (a pipe in non-blocking mode). */
static bool write_all(int fd, const char *buf, size_t len, uint64_t deadline_ms, const _Atomic uint64_t *abort_at)
{
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return false;
        int left = left_ms(deadline_ms, abort_at);
        if (!left)
            return false;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        poll(&p, 1, left);
    }
    return true;
}

/* Wait for pid until the deadline; its status, or -1 (then killed). */
static int wait_until(pid_t pid, uint64_t deadline_ms, const _Atomic uint64_t *abort_at)
{
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0), status;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            status = -1;
            break;
        }
        int left = left_ms(deadline_ms, abort_at);
        if (!left) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            status = -1;
            break;
        }
        if (pfd >= 0) {
            struct pollfd p = {.fd = pfd, .events = POLLIN};
            poll(&p, 1, left);
        } else {
            usleep(10000);
        }
    }
    if (pfd >= 0)
        close(pfd);
    return status;
}

enum rt_deliver_result rt_deliver_mail(const char *sendmail, const char *address, const struct rt_notice_msg *msg,
                                       unsigned timeout_ms, const _Atomic uint64_t *abort_at_ms, char *error,
                                       size_t errlen)
{
    int in[2];
    if (pipe2(in, O_CLOEXEC) < 0) {
        snprintf(error, errlen, "pipe: %s", strerror(errno));
        return RT_DELIVER_RETRY;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_t sa;
    posix_spawnattr_init(&sa);
    sigset_t none, dflt;
    sigemptyset(&none);
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGPIPE);
    posix_spawnattr_setsigmask(&sa, &none);
    posix_spawnattr_setsigdefault(&sa, &dflt);
    posix_spawnattr_setflags(&sa, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char *argv[] = {(char *)sendmail, "-t", "-oi", NULL};
    char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, sendmail, &fa, &sa, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&sa);
    close(in[0]);
    if (rc != 0) {
        close(in[1]);
        snprintf(error, errlen, "cannot run %s: %s", sendmail, strerror(rc));
        return rc == ENOENT || rc == EACCES ? RT_DELIVER_REFUSED : RT_DELIVER_RETRY;
    }
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    uint64_t deadline = rt_mono_ns() / 1000000 + timeout_ms;
    char *text;
    size_t len;
    mail_text(address, msg, &text, &len);
    bool written = write_all(in[1], text, len, deadline, abort_at_ms);
    free(text);
    close(in[1]);
    int status = wait_until(pid, deadline, abort_at_ms);
    if (status < 0) {
        snprintf(error, errlen, "%s did not finish in time", sendmail);
        return RT_DELIVER_RETRY;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && written)
        return RT_DELIVER_OK;
    if (WIFSIGNALED(status)) {
        snprintf(error, errlen, "%s was killed by signal %d", sendmail, WTERMSIG(status));
        return RT_DELIVER_RETRY;
    }
    int code = WEXITSTATUS(status);
    snprintf(error, errlen, "%s exited with status %d%s", sendmail, code, written ? "" : " before reading the mail");
    /* sysexits: EX_TEMPFAIL is worth another try, the others are not */
    return code >= EX__BASE && code <= EX__MAX && code != EX_TEMPFAIL ? RT_DELIVER_REFUSED : RT_DELIVER_RETRY;
}
