#include "api/dispatch.h"

#include "api/call.h"
#include "api/methods.h"
#include "rt/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const struct rt_method_table *const rt_method_tables[] = {
    &rt_service_methods, &rt_host_methods, &rt_job_methods, &rt_sample_methods, &rt_series_methods, &rt_live_methods,
    &rt_notify_methods, &rt_gpu_methods,   &rt_proc_methods, NULL,
};

/* ---- parameters ---- */

static const struct rt_param *find_param(const struct rt_method *m, const char *name)
{
    for (const struct rt_param *p = m->params; p < m->params + RT_METHOD_MAX_PARAMS && p->name; p++)
        if (strcmp(p->name, name) == 0)
            return p;
    return NULL;
}

/* "\u0000" inside would make the C string a different one. */
static bool plain_string(struct json_object *v)
{
    return json_object_is_type(v, json_type_string) &&
           strlen(json_object_get_string(v)) == (size_t)json_object_get_string_len(v);
}

static bool type_ok(const struct rt_param *p, struct json_object *v)
{
    switch (p->type) {
    case RT_P_BOOL:
        return json_object_is_type(v, json_type_boolean);
    case RT_P_INT:
    case RT_P_FD:
        return json_object_is_type(v, json_type_int);
    case RT_P_FLOAT:
        return json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int);
    case RT_P_OBJECT:
        return json_object_is_type(v, json_type_object);
    case RT_P_STRINGS:
        if (!json_object_is_type(v, json_type_array))
            return false;
        for (size_t i = 0; i < json_object_array_length(v); i++)
            if (!plain_string(json_object_array_get_idx(v, i)))
                return false;
        return true;
    case RT_P_STRING:
        break;
    }
    if (!plain_string(v))
        return false;
    const char *s = json_object_get_string(v);
    if (!p->choices)
        return true;
    for (const char *const *ch = p->choices; *ch; ch++)
        if (strcmp(s, *ch) == 0)
            return true;
    return false;
}

/* NULL when the parameters fit the method, else the name to report. */
static const char *check_params(const struct rt_method *m, struct json_object *params)
{
    json_object_object_foreach(params, key, val) {
        const struct rt_param *p = find_param(m, key);
        if (!p || (val && !type_ok(p, val)))
            return key;
    }
    for (const struct rt_param *p = m->params; p < m->params + RT_METHOD_MAX_PARAMS && p->name; p++) {
        struct json_object *v = NULL;
        if (p->required && (!json_object_object_get_ex(params, p->name, &v) || !v))
            return p->name;
    }
    return NULL;
}

/* Within range and checks, and into the arguments struct (args NULL: the
 * method has none): NULL, or the name of the parameter to report. */
static const char *decode_params(const struct rt_method *m, struct json_object *params, unsigned char *args)
{
    for (const struct rt_param *p = m->params; p < m->params + RT_METHOD_MAX_PARAMS && p->name; p++) {
        struct json_object *v = NULL;
        if (!json_object_object_get_ex(params, p->name, &v) || !v)
            continue;
        union { bool b; int64_t i; double d; const void *p; } scratch;
        unsigned char *at = args ? args + p->off : (unsigned char *)&scratch;
        double num = 0;
        switch (p->type) {
        case RT_P_BOOL: *(bool *)(void *)at = json_object_get_boolean(v); break;
        case RT_P_INT:
        case RT_P_FD: *(int64_t *)(void *)at = json_object_get_int64(v); num = (double)json_object_get_int64(v); break;
        case RT_P_FLOAT: *(double *)(void *)at = num = json_object_get_double(v); break;
        case RT_P_STRING: *(const char **)(void *)at = json_object_get_string(v); break;
        case RT_P_OBJECT:
        case RT_P_STRINGS: *(struct json_object **)(void *)at = v; break;
        }
        if (p->min < p->max && !(num >= p->min && num <= p->max)) /* NaN is out of every range */
            return p->name;
        const char *bad = p->check ? p->check(v) : NULL;
        if (bad)
            return bad;
    }
    return NULL;
}

static struct json_object *param(const struct rt_call *c, const char *name)
{
    struct json_object *v = NULL;
    json_object_object_get_ex(c->params, name, &v);
    return v;
}

bool rt_call_has(const struct rt_call *c, const char *name) { return param(c, name) != NULL; }

int64_t rt_call_int(const struct rt_call *c, const char *name, int64_t dflt)
{
    struct json_object *v = param(c, name);
    return v ? json_object_get_int64(v) : dflt;
}

double rt_call_float(const struct rt_call *c, const char *name, double dflt)
{
    struct json_object *v = param(c, name);
    return v ? json_object_get_double(v) : dflt;
}

bool rt_call_bool(const struct rt_call *c, const char *name, bool dflt)
{
    struct json_object *v = param(c, name);
    return v ? json_object_get_boolean(v) : dflt;
}

const char *rt_call_string(const struct rt_call *c, const char *name)
{
    struct json_object *v = param(c, name);
    return v ? json_object_get_string(v) : NULL;
}

struct json_object *rt_call_object(const struct rt_call *c, const char *name)
{
    return param(c, name);
}

int rt_call_take_fd(struct rt_call *c, const char *name)
{
    struct json_object *v = param(c, name);
    if (!v)
        return -1;
    int64_t i = json_object_get_int64(v);
    if (i < 0 || (uint64_t)i >= c->nfds || c->fds[i] < 0)
        return -2;
    int fd = c->fds[i];
    c->fds[i] = -1;
    return fd;
}

struct rt_daemon *rt_call_daemon(const struct rt_call *c) { return rt_server_daemon(c->srv); }
const struct rt_peer *rt_call_peer(const struct rt_call *c) { return &c->conn->peer; }

/* ---- replies ---- */

void rt_call_reply(struct rt_call *c, struct json_object *params)
{
    rt_conn_reply(c->srv, c->conn, params, false);
}

void rt_call_error(struct rt_call *c, const char *error, struct json_object *params)
{
    rt_conn_error(c->srv, c->conn, error, params);
}

void rt_call_invalid_param(struct rt_call *c, const char *name)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "parameter", json_object_new_string(name));
    rt_call_error(c, "org.varlink.service.InvalidParameter", p);
}

void rt_call_error_reason(struct rt_call *c, const char *error, const char *reason)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "reason", json_object_new_string(reason));
    rt_call_error(c, error, p);
}

void rt_call_limit_exceeded(struct rt_call *c, const char *limit, uint64_t max)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "limit", json_object_new_string(limit));
    json_object_object_add(p, "max", json_object_new_int64((int64_t)max));
    rt_call_error(c, RT_E_PREFIX "LimitExceeded", p);
}

/* ---- dispatch ---- */

static const struct rt_method *find_method(const char *iface, const char *name, bool *iface_known)
{
    *iface_known = false;
    for (const struct rt_method_table *const *t = rt_method_tables; *t; t++) {
        if (strcmp((*t)->interface, iface) != 0)
            continue;
        *iface_known = true;
        for (size_t i = 0; i < (*t)->n; i++)
            if (strcmp((*t)->methods[i].name, name) == 0)
                return &(*t)->methods[i];
    }
    return NULL;
}

static void run(struct rt_call *c, const char *iface, const char *name)
{
    bool iface_known;
    const struct rt_method *m = find_method(iface, name, &iface_known);
    if (!m) {
        struct json_object *p = json_object_new_object();
        if (iface_known) {
            /* The name as called, whatever its length (a cut could split a
             * UTF-8 sequence). */
            char *full = rt_xasprintf("%s.%s", iface, name);
            json_object_object_add(p, "method", json_object_new_string(full));
            free(full);
            rt_call_error(c, "org.varlink.service.MethodNotFound", p);
        } else {
            json_object_object_add(p, "interface", json_object_new_string(iface));
            rt_call_error(c, "org.varlink.service.InterfaceNotFound", p);
        }
        return;
    }
    c->method = m;
    if (c->more && !(m->flags & (RT_M_MORE | RT_M_NEEDS_MORE))) {
        rt_call_invalid_param(c, "more");
        return;
    }
    const char *bad = check_params(m, c->params);
    if (!bad)
        bad = decode_params(m, c->params, m->args_size ? c->args : NULL);
    if (bad) {
        rt_call_invalid_param(c, bad);
        return;
    }
    if (!c->more && (m->flags & RT_M_NEEDS_MORE)) {
        rt_call_error(c, "org.varlink.service.ExpectedMore", NULL);
        return;
    }
    m->fn(c);
}

/* A flag of the envelope: absent, or a boolean. */
static bool flag(struct json_object *o, const char *key, bool *out)
{
    struct json_object *v = NULL;
    *out = false;
    if (!json_object_object_get_ex(o, key, &v) || !v)
        return true;
    *out = json_object_get_boolean(v);
    return json_object_is_type(v, json_type_boolean);
}

int rt_dispatch(struct rt_server *srv, struct rt_conn *conn, const char *msg, size_t len, int *fds,
                size_t nfds, char *reason, size_t reason_len)
{
    struct rt_call call = {.srv = srv, .conn = conn, .nfds = nfds};
    memcpy(call.fds, fds, nfds * sizeof(*fds));
    int rc = -EBADMSG;
    struct json_object *o = rt_vl_parse_strict(msg, len, reason, reason_len);
    struct json_object *m = NULL, *params = NULL, *empty = NULL;
    bool upgrade = false;
    if (!o)
        goto out;
    json_object_object_get_ex(o, "method", &m);
    /* Every flag is read (each sets its output), whichever is bad. */
    bool ok = flag(o, "more", &call.more);
    ok = flag(o, "oneway", &call.oneway) && ok;
    ok = flag(o, "upgrade", &upgrade) && ok;
    if (json_object_object_get_ex(o, "parameters", &params) && params &&
        !json_object_is_type(params, json_type_object))
        ok = false;
    if (!m || !json_object_is_type(m, json_type_string) || !ok) {
        snprintf(reason, reason_len, "a call needs a string \"method\", an object \"parameters\" and boolean flags");
        goto out;
    }
    const char *method = json_object_get_string(m);
    const char *dot = strrchr(method, '.');
    if (!dot || dot == method || !dot[1] || strlen(method) != (size_t)json_object_get_string_len(m)) {
        snprintf(reason, reason_len, "method must be interface.Method");
        goto out;
    }
    char iface[256];
    size_t ilen = (size_t)(dot - method);
    if (ilen >= sizeof(iface)) {
        snprintf(reason, reason_len, "interface name too long");
        goto out;
    }
    memcpy(iface, method, ilen);
    iface[ilen] = '\0';
    call.oneway = call.oneway && !call.more;
    conn->more = call.more;
    conn->oneway = call.oneway;
    call.params = params ? params : (empty = json_object_new_object());
    if (upgrade)
        rt_call_invalid_param(&call, "upgrade");
    else
        run(&call, iface, dot + 1);
    rc = 0;
out:
    for (size_t i = 0; i < call.nfds; i++)
        if (call.fds[i] >= 0)
            close(call.fds[i]);
    json_object_put(empty);
    json_object_put(o);
    return rc;
}
