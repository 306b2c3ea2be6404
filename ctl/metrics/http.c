/* One HTTP/1.x exchange on stdin/stdout, for a socket-activated service
 * (Accept=yes: systemd accepts the scrape's connection and runs us on it).
 * GET or HEAD of /metrics answers the exposition text; the connection
 * closes after the answer. */
#include "metrics/metrics.h"

#include <errno.h>
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

static int answer(const char *status, const char *type, const char *body, size_t len, bool head_only)
{
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                     status, type, len);
    if (write_all(head, (size_t)n) < 0 || (!head_only && write_all(body, len) < 0))
        return RT_EXIT_FAILURE;
    return RT_EXIT_OK;
}

static int answer_text(const char *status, const char *text)
{
    return answer(status, "text/plain; charset=utf-8", text, strlen(text), false);
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
