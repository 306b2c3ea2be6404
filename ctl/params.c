/* The daemon's InvalidParameter in the words of the command line: the
 * option or variable the value came from, and the rule it breaks. */
#include "args.h"

#include "rt/util.h"

#include <string.h>

static struct param {
    const char *name;   /* the daemon's parameter */
    const char *rule;
    const char *source; /* set by ctl_args_source */
    const char *value;
} params[] = {
    {"name", CTL_RULE_NAME, NULL, NULL},
    {"pid", CTL_RULE_PID, NULL, NULL},
    {"interval_secs", CTL_RULE_INTERVAL, NULL, NULL},
    {"project_name", CTL_RULE_META, NULL, NULL},
    {"stage_name", CTL_RULE_META, NULL, NULL},
    {"task_name", CTL_RULE_META, NULL, NULL},
    {"team", CTL_RULE_META, NULL, NULL},
    {"env", CTL_RULE_META, NULL, NULL},
    {"language", CTL_RULE_META, NULL, NULL},
    {"orchestrator", CTL_RULE_META, NULL, NULL},
    {"executor", CTL_RULE_META, NULL, NULL},
    {"external_run_id", CTL_RULE_META, NULL, NULL},
    {"container_image", CTL_RULE_META, NULL, NULL},
    {"tags", "at most 1024 tags, each at most 4096 bytes", NULL, NULL},
    {"command", "at most 1024 arguments, each at most 4096 bytes", NULL, NULL},
    {"upload_interval_secs", "an upload interval is a whole number of seconds from 1 to 86400", NULL, NULL},
    {"sentinel_api_url", "a Sentinel API URL starts with http:// or https://", NULL, NULL},
    {"targets", "a target is an http:// or https:// URL or mailto: and one plain address; at most 4, none twice",
     NULL, NULL},
    {"notify", "a target is an http:// or https:// URL or mailto: and one plain address; at most 4, none twice",
     NULL, NULL},
};

static struct param *find(const char *name)
{
    for (size_t i = 0; name && i < RT_ARRAY_SIZE(params); i++)
        if (strcmp(params[i].name, name) == 0)
            return &params[i];
    return NULL;
}

void ctl_args_source(const char *param, const char *source, const char *value)
{
    struct param *p = find(param);
    if (p) {
        p->source = source;
        p->value = value;
    }
}

const char *ctl_args_source_of(const char *param)
{
    const struct param *p = find(param);
    return p && p->source ? p->source : param;
}

void ctl_args_report_param(const char *param)
{
    const struct param *p = find(param);
    char shown[160];
    if (!p) {
        CTL_ERR("invalid value for %s", param ? param : "a parameter");
    } else if (!p->source) {
        CTL_ERR("invalid value for %s: %s", p->name, p->rule);
    } else if (p->value) {
        ctl_fmt_cut(shown, sizeof(shown), p->value, 48);
        CTL_ERR("%s '%s': %s", p->source, shown, p->rule);
    } else {
        CTL_ERR("%s: %s", p->source, p->rule);
    }
}
