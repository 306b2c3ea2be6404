/* One call handed to a method handler, its checked parameters and its replies. */
#ifndef RT_API_CALL_H
#define RT_API_CALL_H

#include "api/dispatch.h"
#include "api/transport.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#define RT_E_PREFIX RT_VL_INTERFACE "."

struct rt_call {
    struct rt_server *srv;
    struct rt_conn *conn;
    const struct rt_method *method;
    struct json_object *params;   /* checked against method->params */
    bool more, oneway;
    int fds[RT_CONN_MAX_FDS];     /* sent with the call; closed after the handler unless taken */
    size_t nfds;
    _Alignas(max_align_t) unsigned char args[RT_METHOD_MAX_ARGS]; /* decoded, checked parameters */
};

struct rt_daemon *rt_call_daemon(const struct rt_call *c);
const struct rt_peer *rt_call_peer(const struct rt_call *c);

/* The method's arguments struct: every parameter decoded and within the
 * range and checks of its table entry (method->args_size > 0). */
static inline const void *rt_call_args(const struct rt_call *c)
{
    return c->args;
}

/* Parameters, already checked for type: absent (or null) gives the default. */
bool rt_call_has(const struct rt_call *c, const char *name);
int64_t rt_call_int(const struct rt_call *c, const char *name, int64_t dflt);
double rt_call_float(const struct rt_call *c, const char *name, double dflt);
bool rt_call_bool(const struct rt_call *c, const char *name, bool dflt);
const char *rt_call_string(const struct rt_call *c, const char *name); /* NULL when absent */
struct json_object *rt_call_object(const struct rt_call *c, const char *name);
/* An RT_P_FD parameter: the descriptor, now the caller's to close; -1 when
 * absent. -2 when the index names no descriptor sent with the call. */
int rt_call_take_fd(struct rt_call *c, const char *name);

/* Replies. params are taken. */
void rt_call_reply(struct rt_call *c, struct json_object *params);
void rt_call_error(struct rt_call *c, const char *error, struct json_object *params);
void rt_call_invalid_param(struct rt_call *c, const char *name);
/* error (a full name) with {"reason": reason}. */
void rt_call_error_reason(struct rt_call *c, const char *error, const char *reason);
/* com.sparecores.ResourceTracker.LimitExceeded {limit, max} */
void rt_call_limit_exceeded(struct rt_call *c, const char *limit, uint64_t max);

#endif
