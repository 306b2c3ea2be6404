/* Job metadata from flags and TRACKER_* variables (the Rust tracker's set). */
#include "ctl.h"

#include "args.h"

#include "rt/request.h"
#include "rt/text.h"
#include "rt/util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define META(n) (CTL_OPT_LONG + 0x40 + (n))
#define TAG META(0)

const struct ctl_opt ctl_meta_opts[] = {
    {"job-name", 'n', "NAME", CTL_RULE_NAME, CTL_KIND_NONE},
    {"interval", 'i', "SECS", CTL_RULE_INTERVAL, CTL_KIND_NONE},
    {"tag", TAG, "KEY=VALUE", CTL_RULE_TAG, CTL_KIND_NONE},
    {"project-name", META(1), "VALUE", NULL, CTL_KIND_NONE},
    {"stage-name", META(2), "VALUE", NULL, CTL_KIND_NONE},
    {"task-name", META(3), "VALUE", NULL, CTL_KIND_NONE},
    {"team", META(4), "VALUE", NULL, CTL_KIND_NONE},
    {"env", META(5), "VALUE", NULL, CTL_KIND_NONE},
    {"language", META(6), "VALUE", NULL, CTL_KIND_NONE},
    {"orchestrator", META(7), "VALUE", NULL, CTL_KIND_NONE},
    {"executor", META(8), "VALUE", NULL, CTL_KIND_NONE},
    {"external-run-id", META(9), "VALUE", NULL, CTL_KIND_NONE},
    {"container-image", META(10), "VALUE", NULL, CTL_KIND_NONE},
    {"request", META(11), "SPEC", "a request is cpus=N,mem=SIZE,gpus=N (e.g. cpus=8,mem=64G,gpus=2)", CTL_KIND_NONE},
    {"notify", META(12), "TARGET", NULL, CTL_KIND_NONE},
    {NULL, 0, NULL, NULL, CTL_KIND_NONE},
};

struct meta_field {
    int val;
    const char *flag;   /* for messages */
    const char *key;    /* JobMetadata key */
    const char *env;
};

static const struct meta_field fields[] = {
    {META(1), "--project-name", "project_name", "TRACKER_PROJECT_NAME"},
    {META(2), "--stage-name", "stage_name", "TRACKER_STAGE_NAME"},
    {META(3), "--task-name", "task_name", "TRACKER_TASK_NAME"},
    {META(4), "--team", "team", "TRACKER_TEAM"},
    {META(5), "--env", "env", "TRACKER_ENV"},
    {META(6), "--language", "language", "TRACKER_LANGUAGE"},
    {META(7), "--orchestrator", "orchestrator", "TRACKER_ORCHESTRATOR"},
    {META(8), "--executor", "executor", "TRACKER_EXECUTOR"},
    {META(9), "--external-run-id", "external_run_id", "TRACKER_EXTERNAL_RUN_ID"},
    {META(10), "--container-image", "container_image", "TRACKER_CONTAINER_IMAGE"},
};

void ctl_meta_init(struct ctl_meta *m)
{
    memset(m, 0, sizeof(*m));
    m->metadata = json_object_new_object();
}

void ctl_meta_free(struct ctl_meta *m)
{
    json_object_put(m->metadata);
    json_object_put(m->request);
    json_object_put(m->notify);
    m->metadata = m->request = m->notify = NULL;
}

/* --request / TRACKER_REQUEST: the JobRequest, or false with why (the
 * daemon then has nothing to refuse in it). */
static bool request(struct ctl_meta *m, const char *v, char *why, size_t whylen)
{
    struct rt_request r;
    if (rt_request_parse(v, &r, why, whylen) < 0)
        return false;
    json_object_put(m->request);
    m->request = rt_request_to_json(&r, NULL);
    return true;
}

static void notify(struct ctl_meta *m, const char *target, const char *from)
{
    if (!m->notify)
        m->notify = json_object_new_array();
    json_object_array_add(m->notify, json_object_new_string(target));
    ctl_args_source("notify", from, NULL); /* which of them: the daemon does not say */
}

int ctl_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < RT_ARRAY_SIZE(yes); i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

int ctl_meta_option(struct ctl_meta *m, const struct ctl_args *a, int val, const char *v)
{
    if (val == 'n') {
        ctl_meta_name(m, v, "--job-name");
        return 1;
    }
    if (val == 'i') {
        if (!ctl_parse_secs(v, &m->interval)) {
            ctl_args_invalid(a, val, v);
            return -1;
        }
        ctl_args_source("interval_secs", "--interval", v);
        return 1;
    }
    if (val == TAG) {
        struct json_object *tags;
        if (!json_object_object_get_ex(m->metadata, "tags", &tags)) {
            tags = json_object_new_array();
            json_object_object_add(m->metadata, "tags", tags);
        }
        json_object_array_add(tags, json_object_new_string(v));
        ctl_args_source("tags", "--tag", NULL);
        return 1;
    }
    char why[256];
    if (val == META(11)) {
        if (request(m, v, why, sizeof(why)))
            return 1;
        ctl_args_invalid(a, val, v);
        return -1;
    }
    if (val == META(12)) {
        notify(m, v, "--notify");
        return 1;
    }
    for (size_t f = 0; f < RT_ARRAY_SIZE(fields); f++) {
        if (fields[f].val == val) {
            json_object_object_add(m->metadata, fields[f].key, json_object_new_string(v));
            ctl_args_source(fields[f].key, fields[f].flag, v);
            return 1;
        }
    }
    return 0;
}

int ctl_meta_from_env(struct ctl_meta *m)
{
    const char *v;
    if (!m->job_name && (v = getenv("TRACKER_JOB_NAME")) && *v)
        ctl_meta_name(m, v, "TRACKER_JOB_NAME");
    char why[256];
    if (!m->request && (v = getenv("TRACKER_REQUEST")) && *v && !request(m, v, why, sizeof(why))) {
        CTL_ERR("TRACKER_REQUEST '%s': %s", v, why);
        return -1;
    }
    if (!m->notify && (v = getenv("TRACKER_NOTIFY")) && *v) {
        /* targets hold no white space: it separates them */
        char *copy = rt_xstrdup(v), *save = NULL;
        for (char *t = strtok_r(copy, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save))
            notify(m, t, "TRACKER_NOTIFY");
        free(copy);
    }
    for (size_t f = 0; f < RT_ARRAY_SIZE(fields); f++) {
        if (json_object_object_get_ex(m->metadata, fields[f].key, NULL))
            continue;
        if ((v = getenv(fields[f].env)) && *v) {
            json_object_object_add(m->metadata, fields[f].key, json_object_new_string(v));
            ctl_args_source(fields[f].key, fields[f].env, v);
        }
    }
    return 0;
}

void ctl_meta_request_params(const struct ctl_meta *m, struct json_object *params)
{
    if (m->request && json_object_object_length(m->request))
        json_object_object_add(params, "request", json_object_get(m->request));
    if (m->notify)
        json_object_object_add(params, "notify", json_object_get(m->notify));
}

void ctl_meta_name(struct ctl_meta *m, const char *name, const char *source)
{
    m->job_name = name;
    ctl_args_source("name", source, name);
}

/* A tag is KEY=VALUE with a KEY (what would "=x" be the value of?). */
static bool valid_tag(const char *t)
{
    return t[0] != '=' && strchr(t, '=') && strlen(t) <= CTL_META_MAX_VALUE;
}

/* Refused (an error), or dropped with a warning when the caller runs a command. */
static int bad_label(const struct ctl_args *a, bool lenient, const char *source, const char *value, const char *rule,
                     const char *then)
{
    char shown[160];
    ctl_fmt_cut(shown, sizeof(shown), value, 48);
    if (!lenient)
        return ctl_args_error(a, "%s '%s': %s", source, shown, rule);
    CTL_ERR("warn: %s '%s': %s; %s", source, shown, rule, then);
    return 0;
}

int ctl_meta_check(struct ctl_meta *m, const struct ctl_args *a, bool lenient)
{
    if (m->job_name && !rt_job_name_valid(m->job_name)) {
        if (bad_label(a, lenient, ctl_args_source_of("name"), m->job_name, CTL_RULE_NAME, "the job has no name"))
            return RT_EXIT_USAGE;
        m->job_name = NULL;
    }
    struct json_object *tags;
    if (json_object_object_get_ex(m->metadata, "tags", &tags)) {
        for (size_t i = json_object_array_length(tags); i-- > 0;) {
            const char *t = json_object_get_string(json_object_array_get_idx(tags, i));
            if (valid_tag(t))
                continue;
            if (bad_label(a, lenient, "--tag", t, CTL_RULE_TAG, "the tag is left out"))
                return RT_EXIT_USAGE;
            json_object_array_del_idx(tags, i, 1);
        }
    }
    for (size_t f = 0; f < RT_ARRAY_SIZE(fields); f++) {
        struct json_object *v;
        if (!json_object_object_get_ex(m->metadata, fields[f].key, &v) ||
            json_object_get_string_len(v) <= CTL_META_MAX_VALUE)
            continue;
        if (bad_label(a, lenient, ctl_args_source_of(fields[f].key), json_object_get_string(v), CTL_RULE_META, "it is left out"))
            return RT_EXIT_USAGE;
        json_object_object_del(m->metadata, fields[f].key);
    }
    return 0;
}

void ctl_upload_params(struct json_object *params)
{
    const char *v = getenv("SENTINEL_API_TOKEN");
    if (!v || !*v)
        return;
    json_object_object_add(params, "sentinel_token", json_object_new_string(v));
    if ((v = getenv("SENTINEL_API_URL")) && *v) {
        json_object_object_add(params, "sentinel_api_url", json_object_new_string(v));
        ctl_args_source("sentinel_api_url", "SENTINEL_API_URL", v);
    }
    long ui;
    if ((v = getenv("TRACKER_UPLOAD_INTERVAL")) && (ui = strtol(v, NULL, 10)) > 0) {
        json_object_object_add(params, "upload_interval_secs", json_object_new_int64(ui));
        ctl_args_source("upload_interval_secs", "TRACKER_UPLOAD_INTERVAL", v);
    }
}
