/* One HTTP/1.x exchange on stdin/stdout, for a socket-activated service
 * (Accept=yes: systemd accepts the scrape's connection and runs us on it).
 * GET or HEAD of /metrics answers the exposition text; the connection
 * closes after the answer. */
#include "metrics/metrics.h"

#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define REQUEST_MAX 8192
#define REQUEST_TIMEOUT_MS 10000
#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Read the request head (up to the blank line) within the time limit.
 * Returns its length, or -1 when it is too long, cut short or too slow. */
static ssize_t read_head(char *buf, size_t size)
{
    size_t len = 0;
    for (;;) {
        buf[len] = '\0';
        if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
            return (ssize_t)len;
        if (len + 1 >= size)
            return -1;
        struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
        int r = poll(&p, 1, REQUEST_TIMEOUT_MS);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        ssize_t n = read(STDIN_FILENO, buf + len, size - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        len += (size_t)n;
    }
}

static int write_all(const char *p, size_t len)
{
    while (len) {
        ssize_t n = write(STDOUT_FILENO, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int answer_with(const char *status, const char *extra, const char *type, const char *body, size_t len,
                       bool head_only)
{
    char head[512];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %s\r\n%sContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                     status, extra, type, len);
    if (write_all(head, (size_t)n) < 0 || (!head_only && write_all(body, len) < 0))
        return RT_EXIT_FAILURE;
    return RT_EXIT_OK;
}

static int answer(const char *status, const char *type, const char *body, size_t len, bool head_only)
{
    return answer_with(status, "", type, body, len, head_only);
}

static int answer_text(const char *status, const char *text)
{
    return answer(status, "text/plain; charset=utf-8", text, strlen(text), false);
}

/* The value of header name in the header lines of a request, trimmed, in
 * buf; NULL when absent. */
static const char *header(const char *lines, const char *name, char *buf, size_t size)
{
    size_t nl = strlen(name);
    for (const char *ln = lines; ln; ln = (ln = strchr(ln, '\n')) ? ln + 1 : NULL) {
        if (strncasecmp(ln, name, nl) != 0 || ln[nl] != ':')
            continue;
        const char *v = ln + nl + 1, *end = strpbrk(v, "\r\n");
        size_t len = end ? (size_t)(end - v) : strlen(v);
        if (len >= size)
            len = size - 1;
        memcpy(buf, v, len);
        buf[len] = '\0';
        return rt_trim(buf);
    }
    return NULL;
}

/* Whether the request proves who sent it: "Authorization: Bearer TOKEN"
 * with the token of the file (compared in constant time). */
static bool token_matches(const char *token, const char *head)
{
    char value[1024];
    const char *v = header(head, "Authorization", value, sizeof(value));
    if (!v || strncasecmp(v, "Bearer ", 7) != 0)
        return false;
    v += 7;
    while (*v == ' ')
        v++;
    size_t a = strlen(v), b = strlen(token);
    unsigned char diff = a != b;
    for (size_t i = 0; i < b; i++)
        diff |= (unsigned char)(token[i] ^ v[i < a ? i : 0]);
    return diff == 0;
}

/* The token scrapes must present: NULL when none is needed (the host only,
 * no token file), "" after printing why when one is needed and cannot be
 * had. Any local user can connect to the port: jobs are published only to
 * a scraper that proves who it is. */
static const char *load_token(const struct ctl_metrics *m, char *buf, size_t size)
{
    if (!m->token_file) {
        if (m->publish == CTL_PUBLISH_NONE)
            return NULL;
        CTL_ERR("publishing jobs over HTTP needs a bearer token (--bearer-token-file, TOKEN_FILE in the unit): "
                "every local user can connect to the port (docs/metrics.md)");
        return "";
    }
    ssize_t n = rt_read_file_at(AT_FDCWD, m->token_file, buf, size);
    if (n < 0 || !*rt_trim(buf)) {
        CTL_ERR("cannot read a bearer token from %s: %s", m->token_file, n < 0 ? strerror((int)-n) : "it is empty");
        return "";
    }
    return rt_trim(buf);
}

/* A request we do not serve: answered, and a usage failure for the log. */
static int refuse(const char *status, const char *text)
{
    answer_text(status, text);
    return RT_EXIT_USAGE;
}

int ctl_metrics_http(const struct ctl_metrics *m)
{
    char req[REQUEST_MAX];
    if (read_head(req, sizeof(req)) < 0) {
        CTL_ERR("no complete HTTP request on stdin");
        return refuse("400 Bad Request", "Bad request\n");
    }
    /* Request line: METHOD SP TARGET SP HTTP/1.x */
    char *line_end = strpbrk(req, "\r\n");
    *line_end = '\0';
    char *method = req, *target = strchr(req, ' '), *version = NULL;
    if (target) {
        *target++ = '\0';
        version = strchr(target, ' ');
        if (version)
            *version++ = '\0';
    }
    if (!target || !version || strncmp(version, "HTTP/1.", 7) != 0)
        return refuse("400 Bad Request", "Bad request\n");
    bool head_only = strcmp(method, "HEAD") == 0;
    if (!head_only && strcmp(method, "GET") != 0)
        return refuse("405 Method Not Allowed", "Only GET and HEAD\n");
    char *query = strchr(target, '?');
    if (query)
        *query = '\0';
    if (strcmp(target, "/") == 0)
        return answer_text("200 OK", "resource-tracker exporter: the metrics are at /metrics\n");
    if (strcmp(target, "/metrics") != 0)
        return refuse("404 Not Found", "Not found: the metrics are at /metrics\n");

    char tokbuf[1024];
    const char *token = load_token(m, tokbuf, sizeof(tokbuf));
    if (token && !*token) {
        answer_text("500 Internal Server Error", "The exporter is not set up (see its log)\n");
        return RT_EXIT_FAILURE;
    }
    if (token && !token_matches(token, line_end + 1)) {
        CTL_ERR("refusing a scrape without the bearer token");
        static const char why[] = "Unauthorized: a bearer token is needed\n";
        answer_with("401 Unauthorized", "WWW-Authenticate: Bearer realm=\"resource-tracker\"\r\n",
                    "text/plain; charset=utf-8", why, sizeof(why) - 1, false);
        return RT_EXIT_DENIED;
    }
    char *text = NULL;
    size_t len = 0;
    int rc = ctl_metrics_collect(m, &text, &len);
    if (rc == RT_EXIT_UNREACHABLE)
        answer_text("503 Service Unavailable", "resource-trackerd does not answer (see the exporter's log)\n");
    else if (rc)
        answer_text("500 Internal Server Error", "The scrape failed (see the exporter's log)\n");
    else
        rc = answer("200 OK", CONTENT_TYPE, text, len, head_only);
    free(text);
    return rc;
}
