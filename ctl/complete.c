/* __complete CWORD WORD...: what may go in word CWORD of a command line,
 * for the bash completion (packaging/bash-completion). It reads the same
 * option descriptions as the parser, and the caller's jobs from the daemon.
 *
 * Output: a first line saying what to complete, then candidates:
 *   words              the lines that follow (already matched to the word)
 *   ordered            the same, to be shown in this order (jobs: newest first)
 *   files | pids | users
 *   command N          a command line starting at word N (run's COMMAND)
 *   none
 * Silent and quick when the daemon does not answer: no jobs are offered.
 * tests/bench/bench_complete.py times it. */
#include "args.h"
#include "ctl.h"

#include "rt/json.h"
#include "rt/paths.h"
#include "rt/util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define JOBS_TIMEOUT_MS 1000
#define JOBS_MAX 200 /* the newest: a TAB stays a few ms */

struct comp {
    struct ctl *ctl;
    const char *cur; /* the word being completed: after '=' in "--opt=", which bash completes apart */
};

static void offer(const struct comp *c, const char *word)
{
    if (strncmp(word, c->cur, strlen(c->cur)) == 0)
        printf("%s\n", word);
}

/* A job name as one shell word: what the shell would take apart or expand
 * behind a backslash ("train\ run"); bash puts a candidate on the line as
 * it is. */
static void offer_name(const struct comp *c, const char *name)
{
    if (strncmp(name, c->cur, strlen(c->cur)) != 0)
        return;
    for (const char *p = name; *p; p++) {
        if (strchr(" \t'\"\\$`!&|;<>()[]{}*?", *p) || (p == name && strchr("~#", *p)))
            putchar('\\');
        putchar(*p);
    }
    putchar('\n');
}

/* The word being completed as the shell reads it: quotes and backslashes
 * taken away ('train r, "train r, train\ r), nothing expanded. */
static char *dequote(const char *w)
{
    char *out = rt_xmalloc(strlen(w) + 1), *o = out;
    char quote = 0; /* the open quote, if any */
    for (; *w; w++) {
        if (quote == '\'') {
            if (*w == '\'')
                quote = 0;
            else
                *o++ = *w;
        } else if (*w == '\\' && w[1] && (quote != '"' || strchr("\"\\$`", w[1]))) {
            *o++ = *++w;
        } else if (*w == '"' && quote == '"') {
            quote = 0;
        } else if ((*w == '"' || *w == '\'') && !quote) {
            quote = *w;
        } else {
            *o++ = *w;
        }
    }
    *o = '\0';
    return out;
}

static void offer_opt(const struct ctl_opt *o, void *data)
{
    char word[64];
    snprintf(word, sizeof(word), "--%s", o->name);
    offer(data, word);
}

static void offer_verbs(const struct comp *c)
{
    printf("words\n");
    for (const struct ctl_verb *v = ctl_verbs; v->name; v++)
        if (v->summary)
            offer(c, v->name);
}

static bool quiet_connect(struct ctl *ctl, struct rt_vl_client *vl)
{
    char user[PATH_MAX];
    const char *paths[] = {ctl->socket, ctl->socket ? NULL : RT_SYSTEM_SOCKET,
                           !ctl->socket && rt_user_socket_path(user, sizeof(user)) == 0 ? user : NULL};
    for (size_t i = 0; i < RT_ARRAY_SIZE(paths); i++) {
        if (paths[i] && rt_vl_client_connect(vl, paths[i]) == 0)
            return true;
        rt_vl_client_close(vl);
    }
    return false;
}

/* Ids and names of the jobs the caller may see, newest first: the ids,
 * then the names (each once). */
static void offer_jobs(const struct comp *c, bool running, bool ids)
{
    printf("ordered\n");
    struct rt_vl_client vl = {.fd = -1};
    struct json_object *reply = NULL;
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "limit", json_object_new_int64(JOBS_MAX));
    if (running)
        json_object_object_add(p, "running_only", json_object_new_boolean(1));
    if (!quiet_connect(c->ctl, &vl) ||
        rt_vl_client_call(&vl, RT_VL_INTERFACE ".ListJobs", p, &reply, JOBS_TIMEOUT_MS) < 0 ||
        rt_vl_reply_error(reply)) {
        json_object_put(reply);
        rt_vl_client_close(&vl);
        return;
    }
    struct json_object *jobs = rt_json_get_array(rt_vl_reply_params(reply), "jobs");
    size_t n = jobs ? json_object_array_length(jobs) : 0;
    char *cur = dequote(c->cur);
    c = &(struct comp){.ctl = c->ctl, .cur = cur};
    for (size_t i = 0; ids && i < n; i++) {
        uint64_t id;
        char buf[32];
        if (rt_json_get_u64(json_object_array_get_idx(jobs, i), "id", &id)) {
            snprintf(buf, sizeof(buf), "%llu", (unsigned long long)id);
            offer(c, buf);
        }
    }
    struct json_object *seen = json_object_new_object();
    for (size_t i = 0; i < n; i++) {
        const char *name = rt_json_get_string(json_object_array_get_idx(jobs, i), "name");
        if (name && !json_object_object_get_ex(seen, name, NULL)) {
            json_object_object_add(seen, name, NULL);
            offer_name(c, name);
        }
    }
    free(cur);
    json_object_put(seen);
    json_object_put(reply);
    rt_vl_client_close(&vl);
}

static void offer_kind(const struct comp *c, enum ctl_kind kind, const struct ctl_spec *spec)
{
    switch (kind) {
    case CTL_KIND_FILE: printf("files\n"); break;
    case CTL_KIND_PID: printf("pids\n"); break;
    case CTL_KIND_USER: printf("users\n"); break;
    case CTL_KIND_JOB: offer_jobs(c, false, true); break;
    case CTL_KIND_RUNNING: offer_jobs(c, true, true); break;
    case CTL_KIND_NAME: offer_jobs(c, false, false); break;
    case CTL_KIND_VERB: offer_verbs(c); break;
    case CTL_KIND_FORMAT:
        printf("words\n");
        for (unsigned bit = CTL_FMT_TEXT; bit <= CTL_FMT_CSV; bit <<= 1)
            if (!spec->formats || (spec->formats & bit))
                offer(c, bit == CTL_FMT_TEXT ? "text" : bit == CTL_FMT_JSON ? "json" : "csv");
        break;
    default: printf("none\n"); break;
    }
}

struct long_match {
    const char *name; /* as typed, without "--", up to '=' */
    size_t len;
    const struct ctl_opt *exact, *prefix;
    int prefixes;
};

static void match_long(const struct ctl_opt *o, void *data)
{
    struct long_match *m = data;
    if (strncmp(o->name, m->name, m->len) != 0)
        return;
    if (o->name[m->len] == '\0')
        m->exact = o;
    m->prefix = o;
    m->prefixes++;
}

/* The option a word names (getopt_long's rules: unique prefixes), or NULL. */
static const struct ctl_opt *long_opt(const struct ctl_spec *spec, const char *word)
{
    struct long_match m = {.name = word + 2, .len = strcspn(word + 2, "=")};
    ctl_args_each(spec, match_long, &m);
    return m.exact ? m.exact : m.prefixes == 1 ? m.prefix : NULL;
}

int ctl_complete(struct ctl *ctl, int argc, char **argv)
{
    uint64_t cword;
    if (argc < 3 || !rt_parse_u64(argv[1], &cword) || cword < 1 || cword > (uint64_t)argc - 2) {
        printf("none\n");
        return RT_EXIT_OK;
    }
    char **words = argv + 2;
    struct comp c = {.ctl = ctl, .cur = cword < (uint64_t)argc - 2 ? words[cword] : ""};
    const struct ctl_spec *spec = &ctl_global_spec;
    const struct ctl_verb *verb = NULL;
    bool options = true;
    int operands = 0;
    for (size_t i = 1; i < cword; i++) {
        const char *w = words[i];
        const struct ctl_opt *o = NULL;
        const char *value = NULL;
        if (options && strcmp(w, "--") == 0) {
            options = false;
            if (verb && spec->operand == CTL_KIND_COMMAND) {
                printf("command %zu\n", i + 1);
                return RT_EXIT_OK;
            }
            continue;
        }
        if (options && w[0] == '-' && w[1] == '-') {
            o = long_opt(spec, w);
            if (o && o->arg && strchr(w, '='))
                value = strchr(w, '=') + 1;
        } else if (options && w[0] == '-' && w[1]) {
            /* a bundle: the first letter that takes a value takes the rest */
            for (const char *p = w + 1; *p && !o; p++) {
                const struct ctl_opt *s = ctl_args_find(spec, (unsigned char)*p);
                if (s && s->arg) {
                    o = s;
                    value = p[1] ? p + 1 : NULL;
                }
            }
        } else if (!verb) {
            verb = ctl_verb_find(w);
            if (!verb || !verb->spec) {
                printf("none\n");
                return RT_EXIT_OK;
            }
            spec = verb->spec;
            options = true;
            continue;
        } else {
            if (spec->operand == CTL_KIND_COMMAND) {
                printf("command %zu\n", i);
                return RT_EXIT_OK;
            }
            operands++;
            continue;
        }
        if (!o || !o->arg)
            continue;
        if (!value) {
            if (i + 1 == cword) {
                offer_kind(&c, o->kind, spec);
                return RT_EXIT_OK;
            }
            value = words[++i];
        }
        if (o->val == CTL_GLOBAL_SOCKET && !verb)
            ctl->socket = value;
    }
    if (options && c.cur[0] == '-' && c.cur[1] == '-' && strchr(c.cur, '=')) {
        const struct ctl_opt *o = long_opt(spec, c.cur);
        if (o && o->arg) {
            c.cur = strchr(c.cur, '=') + 1;
            offer_kind(&c, o->kind, spec);
            return RT_EXIT_OK;
        }
    }
    if (options && c.cur[0] == '-') {
        printf("words\n");
        ctl_args_each(spec, offer_opt, &c);
        return RT_EXIT_OK;
    }
    if (!verb)
        offer_verbs(&c);
    else if (spec->operand == CTL_KIND_COMMAND)
        printf("command %zu\n", (size_t)cword);
    else if (operands == 0)
        offer_kind(&c, spec->operand, spec);
    else
        printf("none\n");
    return RT_EXIT_OK;
}
