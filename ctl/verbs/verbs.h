/* Helpers of the verbs that call the daemon once and print what it says. */
#ifndef RT_CTL_VERBS_H
#define RT_CTL_VERBS_H

#include "args.h"
#include "ctl.h"

#include "rt/json.h"

#define M(name) RT_VL_INTERFACE "." name

/* A number of a reply, 0 when absent. */
static inline double dbl(struct json_object *o, const char *k)
{
    double v = 0;
    rt_json_get_double(o, k, &v);
    return v;
}

static inline int64_t i64(struct json_object *o, const char *k)
{
    int64_t v = 0;
    rt_json_get_i64(o, k, &v);
    return v;
}

#endif
