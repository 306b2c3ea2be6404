/* Varlink wire protocol: NUL-terminated JSON messages over a stream socket
 * (https://varlink.org). Framing, parsing and a small blocking client; the
 * daemon's server side builds on the same reader/writer. */
#ifndef RT_VARLINK_H
#define RT_VARLINK_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RT_VL_INTERFACE "com.sparecores.ResourceTracker"
#define RT_VL_MAX_DEPTH 64
#define RT_VL_DEFAULT_MAX_MESSAGE (1024 * 1024)
/* How messages are serialised (json-c flags). */
#define RT_VL_JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* Accumulates bytes from a socket and hands out complete messages. */
struct rt_vl_reader {
    char *buf;
    size_t start, len, cap; /* pending bytes are buf[start, len) */
    size_t max;             /* longest message accepted, NUL excluded */
    uint64_t consumed;      /* stream offset of buf[start]: messages handed out, NULs included */
};

void rt_vl_reader_init(struct rt_vl_reader *r, size_t max);
void rt_vl_reader_free(struct rt_vl_reader *r);
/* One read(2) into the buffer: bytes read, 0 on EOF, or -errno. */
ssize_t rt_vl_reader_fill(struct rt_vl_reader *r, int fd);
/* The same with recvmsg(2), taking descriptors sent with SCM_RIGHTS (close-on-exec):
 * up to max_fds go to fds (*nfds of them), any more are closed. *at is the stream
 * offset of the first byte read, which the kernel keeps with its descriptors: they
 * belong to the message that starts there. */
ssize_t rt_vl_reader_recv(struct rt_vl_reader *r, int fd, int *fds, size_t max_fds, size_t *nfds,
                          uint64_t *at);
/* Next complete message: 1 with *msg (NUL-terminated, valid until the next
 * fill) and *len, 0 when none is complete yet, -EMSGSIZE when the pending
 * message is longer than the limit. */
int rt_vl_reader_next(struct rt_vl_reader *r, char **msg, size_t *len);
/* Bytes read and not yet handed out (a partial message, or messages not yet
 * asked for). */
size_t rt_vl_reader_pending(const struct rt_vl_reader *r);
/* Free the buffer when nothing is pending (a server keeps none for idle
 * connections). Invalidates the last message. */
void rt_vl_reader_trim(struct rt_vl_reader *r);

/* Parse one message; NULL with a reason when it is not a JSON object, is
 * nested deeper than RT_VL_MAX_DEPTH, or has trailing bytes. */
struct json_object *rt_vl_parse(const char *msg, size_t len, char *err, size_t errlen);
/* The same for messages from untrusted peers: RFC 8259 JSON as json-c's
 * strict mode understands it (no comments, trailing commas, leading zeros)
 * in well-formed UTF-8. */
struct json_object *rt_vl_parse_strict(const char *msg, size_t len, char *err, size_t errlen);

/* Buffered output with partial-write support for non-blocking sockets. */
struct rt_vl_writer {
    char *buf;
    size_t off, len, cap;
};

void rt_vl_writer_init(struct rt_vl_writer *w);
void rt_vl_writer_free(struct rt_vl_writer *w);
/* Append a serialised object followed by NUL. */
void rt_vl_writer_put(struct rt_vl_writer *w, struct json_object *msg);
void rt_vl_writer_put_raw(struct rt_vl_writer *w, const char *json, size_t len);
size_t rt_vl_writer_pending(const struct rt_vl_writer *w);
/* Write as much as the socket takes: 0 when drained (a large buffer is then
 * freed), 1 when bytes remain, -errno on a broken connection. */
int rt_vl_writer_flush(struct rt_vl_writer *w, int fd);

enum {
    RT_VL_MORE = 1 << 0,
    RT_VL_ONEWAY = 1 << 1,
};

/* {"method":…,"parameters":…} with the flags; takes ownership of params. */
struct json_object *rt_vl_call_new(const char *method, struct json_object *params, int flags);

/* Blocking client. */
struct rt_vl_client {
    int fd;
    struct rt_vl_reader rd;
    uid_t peer_uid;       /* who answered (SO_PEERCRED); -1 before */
};

/* 0, or -errno (ENOENT/ECONNREFUSED when no daemon listens). The server must
 * be root or the caller (SO_PEERCRED): another user's gets -EPERM (peer_uid
 * says whose it was) and no byte of ours. */
int rt_vl_client_connect(struct rt_vl_client *c, const char *path);
/* The same for the socket name in the directory dirfd, reached through the
 * descriptor (rt_fd_path): whatever is renamed into the directory's path
 * meanwhile is not followed. */
int rt_vl_client_connect_at(struct rt_vl_client *c, int dirfd, const char *name);
void rt_vl_client_close(struct rt_vl_client *c);
/* Send a call; takes ownership of params. 0 or -errno. */
int rt_vl_client_send(struct rt_vl_client *c, const char *method, struct json_object *params, int flags);
/* The same with descriptors (SCM_RIGHTS) sent with the call's first byte; a
 * parameter names one by its index in fds. */
int rt_vl_client_send_fds(struct rt_vl_client *c, const char *method, struct json_object *params,
                          int flags, const int *fds, size_t nfds);
/* Next reply: 0 with *reply set (caller puts it), -ETIMEDOUT, -ECONNRESET when
 * the peer closed, -EPROTO for a malformed reply. timeout_ms < 0 waits forever. */
int rt_vl_client_recv(struct rt_vl_client *c, struct json_object **reply, int timeout_ms);
/* send + recv of a single reply. *out is the whole reply object. */
int rt_vl_client_call(struct rt_vl_client *c, const char *method, struct json_object *params,
                      struct json_object **out, int timeout_ms);

/* Reply accessors. */
const char *rt_vl_reply_error(struct json_object *reply);
struct json_object *rt_vl_reply_params(struct json_object *reply);
bool rt_vl_reply_continues(struct json_object *reply);

#endif
