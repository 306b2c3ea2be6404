/* From a message to a method handler: the call's envelope, the method by
 * name in per-interface tables, and its parameters checked against the
 * method's table entry (what the IDL states) before the handler runs. */
#ifndef RT_API_DISPATCH_H
#define RT_API_DISPATCH_H

#include "api/transport.h"
#include "sampler/sampler.h"

#include <stdbool.h>
#include <stddef.h>

enum rt_ptype {
    RT_P_BOOL,
    RT_P_INT,
    RT_P_FLOAT,   /* an int is a float too */
    RT_P_STRING,  /* without NUL inside */
    RT_P_OBJECT,  /* a struct type of the IDL; its fields are the handler's to check */
    RT_P_FD,      /* an int: the index of a descriptor sent with the call */
    RT_P_STRINGS, /* []string: an array of strings without NUL inside */
};

struct rt_param {
    const char *name;
    enum rt_ptype type;
    bool required;                /* "name: type" rather than "name: ?type" */
    const char *const *choices;   /* an IDL enum: the strings allowed */
    /* Decoded into the method's arguments (rt_call_args) at off, as bool,
     * int64_t, double, const char *, struct json_object * (an object, an
     * array of strings) or int64_t (the index of an RT_P_FD); absent, it
     * stays 0. */
    size_t off;
    double min, max;              /* RT_P_INT, RT_P_FLOAT: the range allowed, when min < max */
    /* What a range cannot say: NULL, or the name to report as invalid. */
    const char *(*check)(struct json_object *v);
};

#define RT_REQ(name, type) {(name), (type), true, NULL, 0, 0, 0, NULL}
#define RT_OPT(name, type) {(name), (type), false, NULL, 0, 0, 0, NULL}
#define RT_OPT_ONE_OF(name, choices) {(name), RT_P_STRING, false, (choices), 0, 0, 0, NULL}
/* A parameter decoded into member m (its name) of the arguments struct T;
 * then .required, RT_RANGE, .check or .choices as needed. */
#define RT_ARG(T, m, type_, ...) {.name = #m, .type = (type_), .off = offsetof(T, m), __VA_ARGS__}
/* Cast: INT64_MAX rounds up to 2^63 as a double, which every int64 is below. */
#define RT_RANGE(lo, hi) .min = (double)(lo), .max = (double)(hi)

enum {
    RT_M_MORE = 1 << 0,       /* may be called with "more" */
    RT_M_NEEDS_MORE = 1 << 1, /* only with "more" (a stream) */
};

#define RT_METHOD_MAX_PARAMS 20

struct rt_call;

/* The largest arguments struct a method may decode into. */
#define RT_METHOD_MAX_ARGS 256

struct rt_method {
    const char *name;
    void (*fn)(struct rt_call *c);
    unsigned flags;
    struct rt_param params[RT_METHOD_MAX_PARAMS]; /* ends at the first without a name */
    size_t args_size;             /* its arguments struct (0: the handler reads the parameters) */
};

/* The methods of one area (host, jobs, samples …) of an interface. */
struct rt_method_table {
    const char *interface;
    const struct rt_method *methods;
    size_t n;
};

/* Every table the daemon serves, ending with {NULL}. */
extern const struct rt_method_table *const rt_method_tables[];

/* Serve one message with the descriptors sent with it (taken). -EBADMSG with a
 * reason when it is not a well-formed call: the caller answers
 * InvalidRequest and hangs up. */
int rt_dispatch(struct rt_server *srv, struct rt_conn *conn, const char *msg, size_t len,
                int *fds, size_t nfds, char *reason, size_t reason_len);

#endif
