/* Job metadata from flags and TRACKER_* variables (the Rust tracker's set). */
#include "ctl.h"

#include "rt/util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct meta_field {
    const char *flag;   /* long option */
    const char *key;    /* JobMetadata key */
    const char *env;
};

static const struct meta_field fields[] = {
    {"--project-name", "project_name", "TRACKER_PROJECT_NAME"},
    {"--stage-name", "stage_name", "TRACKER_STAGE_NAME"},
    {"--task-name", "task_name", "TRACKER_TASK_NAME"},
    {"--team", "team", "TRACKER_TEAM"},
    {"--env", "env", "TRACKER_ENV"},
    {"--language", "language", "TRACKER_LANGUAGE"},
    {"--orchestrator", "orchestrator", "TRACKER_ORCHESTRATOR"},
    {"--executor", "executor", "TRACKER_EXECUTOR"},
    {"--external-run-id", "external_run_id", "TRACKER_EXTERNAL_RUN_ID"},
    {"--container-image", "container_image", "TRACKER_CONTAINER_IMAGE"},
};

void ctl_meta_init(struct ctl_meta *m)
{
    memset(m, 0, sizeof(*m));
    m->metadata = json_object_new_object();
}

void ctl_meta_free(struct ctl_meta *m)
{
    json_object_put(m->metadata);
    m->metadata = NULL;
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

/* "--flag VALUE" or "--flag=VALUE" at argv[*i]; NULL when not this flag. */
static const char *flag_value(const char *flag, const char *alias, int argc, char **argv, int *i,
                              bool *missing)
{
    const char *a = argv[*i];
    size_t n = strlen(flag);
    *missing = false;
    if (strncmp(a, flag, n) == 0 && a[n] == '=')
        return a + n + 1;
    if (strcmp(a, flag) == 0 || (alias && strcmp(a, alias) == 0)) {
        if (*i + 1 >= argc) {
            *missing = true;
            return NULL;
        }
        return argv[++*i];
    }
    return NULL;
}

int ctl_meta_option(struct ctl_meta *m, int argc, char **argv, int *i)
{
    bool missing;
    const char *v;
    if ((v = flag_value("--job-name", "-n", argc, argv, i, &missing)) || missing) {
        if (missing)
            goto missing;
        m->job_name = v;
        return 1;
    }
    if ((v = flag_value("--interval", "-i", argc, argv, i, &missing)) || missing) {
        if (missing)
            goto missing;
        char *end;
        m->interval = strtod(v, &end);
        if (*end || !(m->interval > 0 && m->interval <= 3600)) {
            CTL_ERR("invalid --interval: %s (seconds, more than 0)", v);
            return -1;
        }
        return 1;
    }
    if ((v = flag_value("--tag", NULL, argc, argv, i, &missing)) || missing) {
        if (missing)
            goto missing;
        if (!strchr(v, '=')) {
            CTL_ERR("invalid --tag: %s (expected KEY=VALUE)", v);
            return -1;
        }
        struct json_object *tags;
        if (!json_object_object_get_ex(m->metadata, "tags", &tags)) {
            tags = json_object_new_array();
            json_object_object_add(m->metadata, "tags", tags);
        }
        json_object_array_add(tags, json_object_new_string(v));
        return 1;
    }
    for (size_t f = 0; f < RT_ARRAY_SIZE(fields); f++) {
        if ((v = flag_value(fields[f].flag, NULL, argc, argv, i, &missing)) || missing) {
            if (missing)
                goto missing;
            json_object_object_add(m->metadata, fields[f].key, json_object_new_string(v));
            return 1;
        }
    }
    return 0;
missing:
    CTL_ERR("option %s needs a value", argv[*i]);
    return -1;
}

int ctl_meta_from_env(struct ctl_meta *m)
{
    const char *v;
    if (!m->job_name && (v = getenv("TRACKER_JOB_NAME")) && *v)
        m->job_name = v;
    for (size_t f = 0; f < RT_ARRAY_SIZE(fields); f++) {
        if (json_object_object_get_ex(m->metadata, fields[f].key, NULL))
            continue;
        if ((v = getenv(fields[f].env)) && *v)
            json_object_object_add(m->metadata, fields[f].key, json_object_new_string(v));
    }
    return 0;
}

void ctl_upload_params(struct json_object *params)
{
    const char *v = getenv("SENTINEL_API_TOKEN");
    if (!v || !*v)
        return;
    json_object_object_add(params, "sentinel_token", json_object_new_string(v));
    if ((v = getenv("SENTINEL_API_URL")) && *v)
        json_object_object_add(params, "sentinel_api_url", json_object_new_string(v));
    long ui;
    if ((v = getenv("TRACKER_UPLOAD_INTERVAL")) && (ui = strtol(v, NULL, 10)) > 0)
        json_object_object_add(params, "upload_interval_secs", json_object_new_int64(ui));
}
