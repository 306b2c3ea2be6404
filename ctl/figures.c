#include "ctl.h"

#include "rt/job_figures.h"
#include "rt/json.h"

#include <stdlib.h>

static const struct rt_fig_sample *sample_row(const char *name)
{
    int row = rt_fig_sample_find(name);
    if (row < 0)
        abort();
    return &rt_fig_samples[row];
}

bool ctl_total(struct json_object *summary, const char *key, double *v)
{
    if (rt_fig_total_find(key) < 0)
        abort();
    return rt_fig_summary_get(summary, key, v);
}

double ctl_total0(struct json_object *summary, const char *key)
{
    double v = 0;
    ctl_total(summary, key, &v);
    return v;
}

const char *ctl_fig_json(const char *name)
{
    return sample_row(name)->json;
}

const char *ctl_fig_now(const char *name)
{
    return sample_row(name)->now;
}
