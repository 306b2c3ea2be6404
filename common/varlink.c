#include "rt/varlink.h"

#include "rt/json.h"
#include "rt/paths.h"
#include "rt/util.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <stdlib.h>

#define READ_CHUNK 65536
#define WRITER_KEEP 4096

void rt_vl_reader_init(struct rt_vl_reader *r, size_t max)
{
    memset(r, 0, sizeof(*r));
    r->max = max;
}

void rt_vl_reader_free(struct rt_vl_reader *r)
{
    free(r->buf);
    memset(r, 0, sizeof(*r));
}

static void reader_make_room(struct rt_vl_reader *r)
{
    if (r->start > 0 && (r->start == r->len || r->len + READ_CHUNK > r->cap)) {
        memmove(r->buf, r->buf + r->start, r->len - r->start);
        r->len -= r->start;
        r->start = 0;
    }
    if (r->cap - r->len < READ_CHUNK + 1) {
        /* Grow by half (a long message is not copied once per read), but
         * not past what the longest message needs. */
        size_t need = r->len + READ_CHUNK + 1, cap = r->cap + r->cap / 2, most = r->max + READ_CHUNK + 1;
        r->cap = cap < need ? need : cap > most && most > need ? most : cap;
        r->buf = rt_xrealloc(r->buf, r->cap);
    }
}

ssize_t rt_vl_reader_fill(struct rt_vl_reader *r, int fd)
{
    reader_make_room(r);
    ssize_t n = read(fd, r->buf + r->len, r->cap - r->len - 1);
    if (n < 0)
        return -errno;
    r->len += (size_t)n;
    return n;
}

#define MAX_FDS_PER_READ 16

ssize_t rt_vl_reader_recv(struct rt_vl_reader *r, int fd, int *fds, size_t max_fds, size_t *nfds,
                          uint64_t *at)
{
    reader_make_room(r);
    *nfds = 0;
    *at = r->consumed + (r->len - r->start);
    union {
        char buf[CMSG_SPACE(MAX_FDS_PER_READ * sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {.iov_base = r->buf + r->len, .iov_len = r->cap - r->len - 1};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                        .msg_controllen = sizeof(ctl.buf)};
    ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
    if (n < 0)
        return -errno;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int got;
            memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            if (*nfds < max_fds)
                fds[(*nfds)++] = got;
            else
                close(got);
        }
    }
    r->len += (size_t)n;
    return n;
}

size_t rt_vl_reader_pending(const struct rt_vl_reader *r)
{
    return r->len - r->start;
}

void rt_vl_reader_trim(struct rt_vl_reader *r)
{
    if (r->start < r->len || !r->buf)
        return;
    free(r->buf);
    r->buf = NULL;
    r->start = r->len = r->cap = 0;
}

int rt_vl_reader_next(struct rt_vl_reader *r, char **msg, size_t *len)
{
    size_t pending = r->len - r->start;
    if (pending == 0)
        return 0;
    char *p = r->buf + r->start;
    char *nul = memchr(p, '\0', pending);
    if (!nul)
        return pending > r->max ? -EMSGSIZE : 0;
    size_t n = (size_t)(nul - p);
    if (n > r->max)
        return -EMSGSIZE;
    *msg = p;
    *len = n;
    r->start += n + 1;
    r->consumed += n + 1;
    return 1;
}

static struct json_object *parse(const char *msg, size_t len, int flags, char *err, size_t errlen)
{
    struct json_tokener *tok = json_tokener_new_ex(RT_VL_MAX_DEPTH);
    if (!tok) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    json_tokener_set_flags(tok, flags);
    struct json_object *o = json_tokener_parse_ex(tok, msg, (int)len);
    enum json_tokener_error e = json_tokener_get_error(tok);
    size_t used = json_tokener_get_parse_end(tok);
    if (e == json_tokener_continue) {
        /* The message ends here: a top-level number ("42") is complete only
         * when the tokener sees the end. */
        o = json_tokener_parse_ex(tok, "", 1);
        e = json_tokener_get_error(tok);
        used = len;
    }
    json_tokener_free(tok);
    if (e != json_tokener_success) {
        snprintf(err, errlen, "invalid JSON: %s", json_tokener_error_desc(e));
        json_object_put(o);
        return NULL;
    }
    for (; used < len; used++) {
        if (msg[used] != ' ' && msg[used] != '\t' && msg[used] != '\n' && msg[used] != '\r') {
            snprintf(err, errlen, "invalid JSON: trailing data after the object");
            json_object_put(o);
            return NULL;
        }
    }
    if (!json_object_is_type(o, json_type_object)) { /* NULL is the JSON null */
        snprintf(err, errlen, "a message must be a JSON object");
        json_object_put(o);
        return NULL;
    }
    return o;
}

struct json_object *rt_vl_parse(const char *msg, size_t len, char *err, size_t errlen)
{
    return parse(msg, len, 0, err, errlen);
}

struct json_object *rt_vl_parse_strict(const char *msg, size_t len, char *err, size_t errlen)
{
    if (!rt_utf8_valid(msg, len)) {
        snprintf(err, errlen, "invalid JSON: not UTF-8");
        return NULL;
    }
    return parse(msg, len, JSON_TOKENER_STRICT, err, errlen);
}

void rt_vl_writer_init(struct rt_vl_writer *w)
{
    memset(w, 0, sizeof(*w));
}

void rt_vl_writer_free(struct rt_vl_writer *w)
{
    free(w->buf);
    memset(w, 0, sizeof(*w));
}

void rt_vl_writer_put_raw(struct rt_vl_writer *w, const char *json, size_t len)
{
    if (w->off > 0 && w->off == w->len)
        w->off = w->len = 0;
    if (w->cap - w->len < len + 1) {
        if (w->off > 0) {
            memmove(w->buf, w->buf + w->off, w->len - w->off);
            w->len -= w->off;
            w->off = 0;
        }
        if (w->cap - w->len < len + 1) {
            size_t cap = w->cap ? w->cap : 4096;
            while (cap - w->len < len + 1)
                cap *= 2;
            w->buf = rt_xrealloc(w->buf, cap);
            w->cap = cap;
        }
    }
    memcpy(w->buf + w->len, json, len);
    w->buf[w->len + len] = '\0';
    w->len += len + 1;
}

void rt_vl_writer_put(struct rt_vl_writer *w, struct json_object *msg)
{
    size_t len;
    const char *s = json_object_to_json_string_length(msg, RT_VL_JSON_FLAGS, &len);
    rt_vl_writer_put_raw(w, s, len);
}

size_t rt_vl_writer_pending(const struct rt_vl_writer *w)
{
    return w->len - w->off;
}

int rt_vl_writer_flush(struct rt_vl_writer *w, int fd)
{
    while (w->off < w->len) {
        ssize_t n = send(fd, w->buf + w->off, w->len - w->off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 1;
            return -errno;
        }
        w->off += (size_t)n;
    }
    w->off = w->len = 0;
    /* A large reply's buffer is not kept once it is sent. */
    if (w->cap > WRITER_KEEP) {
        free(w->buf);
        w->buf = NULL;
        w->cap = 0;
    }
    return 0;
}

struct json_object *rt_vl_call_new(const char *method, struct json_object *params, int flags)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "method", json_object_new_string(method));
    json_object_object_add(o, "parameters", params ? params : json_object_new_object());
    if (flags & RT_VL_MORE)
        json_object_object_add(o, "more", json_object_new_boolean(1));
    if (flags & RT_VL_ONEWAY)
        json_object_object_add(o, "oneway", json_object_new_boolean(1));
    return o;
}

/* Who answers: root or we ourselves. Another user's socket at the path we
 * meant (a directory swapped in, a planted socket) would receive our calls,
 * their command lines and upload tokens. */
static int check_peer(struct rt_vl_client *c, int fd)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        return -errno;
    c->peer_uid = cred.uid;
    return cred.uid == 0 || cred.uid == geteuid() || cred.uid == getuid() ? 0 : -EPERM;
}

int rt_vl_client_connect(struct rt_vl_client *c, const char *path)
{
    c->fd = -1;
    c->peer_uid = (uid_t)-1;
    rt_vl_reader_init(&c->rd, 64 * 1024 * 1024);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path))
        return -ENAMETOOLONG;
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int r = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : check_peer(c, fd);
    if (r < 0) {
        close(fd);
        return r;
    }
    c->fd = fd;
    return 0;
}

int rt_vl_client_connect_at(struct rt_vl_client *c, int dirfd, const char *name)
{
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    if (rt_fd_path(path, sizeof(path), dirfd, name) < 0) {
        c->fd = -1;
        rt_vl_reader_init(&c->rd, 0);
        return -ENAMETOOLONG;
    }
    return rt_vl_client_connect(c, path);
}

void rt_vl_client_close(struct rt_vl_client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    rt_vl_reader_free(&c->rd);
}

int rt_vl_client_send(struct rt_vl_client *c, const char *method, struct json_object *params, int flags)
{
    return rt_vl_client_send_fds(c, method, params, flags, NULL, 0);
}

int rt_vl_client_send_fds(struct rt_vl_client *c, const char *method, struct json_object *params,
                          int flags, const int *fds, size_t nfds)
{
    struct json_object *call = rt_vl_call_new(method, params, flags);
    size_t len;
    const char *s = json_object_to_json_string_length(
        call, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    int rc = 0;
    if (nfds > MAX_FDS_PER_READ) {
        json_object_put(call);
        return -EINVAL;
    }
    /* Send the terminating NUL too; descriptors go with the first byte. */
    for (size_t off = 0; off < len + 1;) {
        union {
            char buf[CMSG_SPACE(MAX_FDS_PER_READ * sizeof(int))];
            struct cmsghdr align;
        } ctl;
        struct iovec iov = {.iov_base = (char *)s + off, .iov_len = len + 1 - off};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        if (off == 0 && nfds) {
            memset(&ctl, 0, sizeof(ctl));
            mh.msg_control = ctl.buf;
            mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
            struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
            memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
        }
        ssize_t n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            break;
        }
        off += (size_t)n;
    }
    json_object_put(call);
    return rc;
}

int rt_vl_client_recv(struct rt_vl_client *c, struct json_object **reply, int timeout_ms)
{
    for (;;) {
        char *msg;
        size_t len;
        int r = rt_vl_reader_next(&c->rd, &msg, &len);
        if (r < 0)
            return -EPROTO;
        if (r > 0) {
            char err[128];
            *reply = rt_vl_parse(msg, len, err, sizeof(err));
            return *reply ? 0 : -EPROTO;
        }
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        int pr = poll(&pfd, 1, timeout_ms);
        if (pr < 0) {
            if (errno == EINTR)
                return -EINTR;
            return -errno;
        }
        if (pr == 0)
            return -ETIMEDOUT;
        ssize_t n = rt_vl_reader_fill(&c->rd, c->fd);
        if (n == 0)
            return -ECONNRESET;
        if (n < 0 && n != -EINTR && n != -EAGAIN)
            return (int)n;
    }
}

int rt_vl_client_call(struct rt_vl_client *c, const char *method, struct json_object *params,
                      struct json_object **out, int timeout_ms)
{
    int r = rt_vl_client_send(c, method, params, 0);
    if (r < 0)
        return r;
    return rt_vl_client_recv(c, out, timeout_ms);
}

const char *rt_vl_reply_error(struct json_object *reply)
{
    return rt_json_get_string(reply, "error");
}

struct json_object *rt_vl_reply_params(struct json_object *reply)
{
    return rt_json_get_object(reply, "parameters");
}

bool rt_vl_reply_continues(struct json_object *reply)
{
    bool b = false;
    rt_json_get_bool(reply, "continues", &b);
    return b;
}
