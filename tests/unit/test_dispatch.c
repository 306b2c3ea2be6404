/* The varlink server without a sampler: a real socket, calls checked against
 * the method tables before any handler runs, descriptors sent with a call,
 * ListJobs paging over a registry of fake jobs; and the tables agree with
 * the IDL the daemon serves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "api/api.h"
#include "api/dispatch.h"
#include "daemon.h"
#include "system/listen.h"
#include "rt/json.h"
#include "rt/util.h"
#include "rt/varlink.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

extern const char rt_idl_resource_tracker[];
extern const char rt_idl_varlink_service[];

struct fx {
    struct rt_daemon d;
    char dir[64], path[96];
    int epfd;
    struct rt_vl_client client;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    rt_config_defaults(&f->d.cfg);
    rt_jobs_init(&f->d.jobs);
    strcpy(f->dir, "/tmp/rt-dispatch-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/sock", f->dir);
    char err[256];
    f->d.listen_fd = rt_listen_unix(f->path, -1, 0600, err, sizeof(err));
    assert_true(f->d.listen_fd >= 0);
    f->epfd = epoll_create1(EPOLL_CLOEXEC);
    f->d.server = rt_server_new(&f->d, f->d.listen_fd, f->epfd);
    assert_int_equal(rt_vl_client_connect(&f->client, f->path), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    rt_vl_client_close(&f->client);
    rt_server_free(f->d.server);
    close(f->epfd);
    close(f->d.listen_fd);
    unlink(f->path);
    rmdir(f->dir);
    rt_jobs_free(&f->d.jobs);
    free(f);
    return 0;
}

/* The main loop, until the client has a reply. */
static struct json_object *reply(struct fx *f)
{
    for (int round = 0; round < 200; round++) {
        struct json_object *r = NULL;
        if (rt_vl_client_recv(&f->client, &r, 0) == 0)
            return r;
        struct epoll_event evs[8];
        int n = epoll_wait(f->epfd, evs, 8, 10);
        for (int i = 0; i < n; i++)
            rt_server_event(f->d.server, evs[i].data.ptr, evs[i].events);
        rt_server_settle(f->d.server);
    }
    fail_msg("no reply");
    return NULL;
}

static struct json_object *call_fds(struct fx *f, const char *method, const char *params, int flags,
                                    const int *fds, size_t nfds)
{
    char err[128];
    struct json_object *p = params ? rt_vl_parse(params, strlen(params), err, sizeof(err)) : NULL;
    assert_int_equal(rt_vl_client_send_fds(&f->client, method, p, flags, fds, nfds), 0);
    return reply(f);
}

static struct json_object *call(struct fx *f, const char *method, const char *params, int flags)
{
    return call_fds(f, method, params, flags, NULL, 0);
}

/* The error of a reply and, for InvalidParameter, the parameter it names. */
static void assert_error(struct json_object *r, const char *error, const char *parameter)
{
    assert_non_null(r);
    const char *e = rt_vl_reply_error(r);
    assert_non_null(e);
    assert_string_equal(e, error);
    if (parameter)
        assert_string_equal(rt_json_get_string(rt_vl_reply_params(r), "parameter"), parameter);
    json_object_put(r);
}

#define TRACKER(m) RT_VL_INTERFACE "." m
#define INVALID "org.varlink.service.InvalidParameter"

static void test_parameters_checked_before_handlers(void **state)
{
    struct fx *f = *state;
    struct json_object *r = call(f, TRACKER("Ping"), NULL, 0);
    assert_null(rt_vl_reply_error(r));
    json_object_put(r);
    assert_error(call(f, TRACKER("Ping"), "{\"x\":1}", 0), INVALID, "x");
    assert_error(call(f, "org.varlink.service.GetInterfaceDescription", "{}", 0), INVALID, "interface");
    assert_error(call(f, "org.varlink.service.GetInterfaceDescription", "{\"interface\":7}", 0), INVALID,
                 "interface");
    assert_error(call(f, TRACKER("ListJobs"), "{\"running_only\":\"yes\"}", 0), INVALID, "running_only");
    assert_error(call(f, TRACKER("ListJobs"), "{\"since\":\"today\"}", 0), INVALID, "since");
    assert_error(call(f, TRACKER("GetJobSamples"), "{\"id\":1,\"format\":\"xml\"}", 0), INVALID, "format");
    assert_error(call(f, TRACKER("GetJobSamples"), "{\"id\":1,\"name\":\"a\\u0000b\"}", 0), INVALID, "name");
    assert_error(call(f, TRACKER("StartJob"), "{\"name\":\"x\"}", 0), INVALID, "pid");
    /* Ranges and checks of the tables, before the handler. */
    assert_error(call(f, TRACKER("StartJob"), "{\"pid\":0}", 0), INVALID, "pid");
    assert_error(call(f, TRACKER("StartJob"), "{\"pid\":1,\"interval_secs\":0.01}", 0), INVALID, "interval_secs");
    assert_error(call(f, TRACKER("StartJob"), "{\"pid\":1,\"gpus\":0}", 0), INVALID, "gpus");
    assert_error(call(f, TRACKER("StartJob"), "{\"pid\":1,\"gpus\":65}", 0), INVALID, "gpus");
    assert_error(call(f, TRACKER("StartJob"), "{\"pid\":1,\"name\":\"12\"}", 0), INVALID, "name");
    assert_error(call(f, TRACKER("FinishJob"), "{\"id\":1,\"exit_code\":256}", 0), INVALID, "exit_code");
    assert_error(call(f, TRACKER("ListJobs"), "{\"limit\":0}", 0), INVALID, "limit");
    assert_error(call(f, TRACKER("GetJob"), "{\"name\":\"a\",\"owner_uid\":-1}", 0), INVALID, "owner_uid");
    assert_error(call(f, TRACKER("GetGpus"), "{\"uuid\":\"GPU-1\"}", 0), INVALID, "uuid");
    assert_error(call(f, TRACKER("GetJobProcesses"), "{}", 0), INVALID, "id");
    assert_error(call(f, TRACKER("GetJobProcesses"), "{\"id\":99}", 0), TRACKER("NoSuchJob"), NULL);
    assert_error(call(f, TRACKER("GetJobSeries"), "{}", 0), INVALID, "id");
    assert_error(call(f, TRACKER("GetJobSeries"), "{\"id\":1,\"points\":10001}", 0), INVALID, "points");
    assert_error(call(f, TRACKER("GetJobSeries"), "{\"id\":1,\"limit\":-1}", 0), INVALID, "limit");
    assert_error(call(f, TRACKER("GetJobSeries"), "{\"id\":99}", 0), TRACKER("NoSuchJob"), NULL);
    /* without a sampler (nor a GPU) the list is empty */
    r = call(f, TRACKER("GetGpus"), NULL, 0);
    assert_null(rt_vl_reply_error(r));
    assert_int_equal(json_object_array_length(rt_json_get_array(rt_vl_reply_params(r), "gpus")), 0);
    json_object_put(r);
    /* A null is an absent optional parameter, not a wrong type. */
    r = call(f, TRACKER("ListJobs"), "{\"name\":null}", 0);
    assert_null(rt_vl_reply_error(r));
    json_object_put(r);
    assert_error(call(f, TRACKER("ListJobs"), NULL, RT_VL_MORE), INVALID, "more");
    assert_error(call(f, TRACKER("StreamHostSamples"), NULL, 0), "org.varlink.service.ExpectedMore", NULL);
    assert_error(call(f, TRACKER("Pong"), NULL, 0), "org.varlink.service.MethodNotFound", NULL);
    assert_error(call(f, "org.example.Nothing", NULL, 0), "org.varlink.service.InterfaceNotFound", NULL);
}

static void test_unclaimed_descriptors_are_closed(void **state)
{
    struct fx *f = *state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    struct json_object *r = call_fds(f, TRACKER("Ping"), NULL, 0, &p[1], 1);
    assert_null(rt_vl_reply_error(r));
    json_object_put(r);
    close(p[1]);
    /* The daemon's copy of the write end is closed too: the read end sees EOF. */
    char c;
    assert_int_equal(read(p[0], &c, 1), 0);
    close(p[0]);
}

static void add_job(struct fx *f, uint64_t id, uid_t owner, const char *name, double started, size_t md_bytes)
{
    struct rt_job *j = rt_job_new();
    j->id = id;
    j->owner_uid = owner;
    j->name = name ? rt_xstrdup(name) : NULL;
    j->state = id % 3 ? RT_JOB_FINISHED : RT_JOB_RUNNING;
    j->started_at = started;
    j->ended_at = started + 1;
    j->interval_secs = 1;
    j->metadata = json_object_new_object();
    if (md_bytes) {
        char *blob = malloc(md_bytes + 1);
        memset(blob, 'x', md_bytes);
        blob[md_bytes] = '\0';
        json_object_object_add(j->metadata, "team", json_object_new_string(blob));
        free(blob);
    }
    rt_jobs_add(&f->d.jobs, j);
}

/* Ids of every page of ListJobs, following next_before_id. */
static size_t list_ids(struct fx *f, const char *filter, uint64_t *ids, size_t max, size_t *pages)
{
    size_t n = 0;
    *pages = 0;
    char params[256];
    snprintf(params, sizeof(params), "%s", filter);
    for (;;) {
        struct json_object *r = call(f, TRACKER("ListJobs"), params, 0);
        assert_null(rt_vl_reply_error(r));
        struct json_object *p = rt_vl_reply_params(r), *jobs = rt_json_get_array(p, "jobs");
        (*pages)++;
        for (size_t i = 0; i < json_object_array_length(jobs) && n < max; i++)
            rt_json_get_u64(json_object_array_get_idx(jobs, i), "id", &ids[n++]);
        uint64_t next;
        bool more = rt_json_get_u64(p, "next_before_id", &next);
        json_object_put(r);
        if (!more)
            return n;
        size_t len = strlen(filter);
        snprintf(params, sizeof(params), "%.*s%s\"before_id\":%llu}", (int)(len - 1), filter,
                 len > 2 ? "," : "", (unsigned long long)next);
    }
}

static void test_list_jobs_pages_and_filters(void **state)
{
    struct fx *f = *state;
    for (uint64_t id = 1; id <= 30; id++)
        add_job(f, id, id % 2 ? 1000 : 1001, id % 5 ? "train" : "eval", 1000.0 + (double)id, 0);
    uint64_t ids[64];
    size_t pages;
    assert_int_equal(list_ids(f, "{}", ids, 64, &pages), 30);
    assert_int_equal(pages, 1);
    for (size_t i = 0; i < 30; i++)
        assert_int_equal(ids[i], 30 - i); /* newest first */
    /* limit pages through all of them, none twice. */
    assert_int_equal(list_ids(f, "{\"limit\":7}", ids, 64, &pages), 30);
    assert_int_equal(pages, 5);
    for (size_t i = 0; i < 30; i++)
        assert_int_equal(ids[i], 30 - i);
    assert_int_equal(list_ids(f, "{\"name\":\"eval\"}", ids, 64, &pages), 6);
    assert_int_equal(ids[0], 30);
    assert_int_equal(ids[5], 5);
    assert_int_equal(list_ids(f, "{\"owner_uid\":1001,\"name\":\"eval\",\"limit\":2}", ids, 64, &pages), 3);
    assert_int_equal(ids[0], 30);
    assert_int_equal(ids[1], 20);
    assert_int_equal(ids[2], 10);
    assert_int_equal(list_ids(f, "{\"since\":1025.0}", ids, 64, &pages), 6);
    assert_int_equal(list_ids(f, "{\"running_only\":true}", ids, 64, &pages), 10);
    assert_error(call(f, TRACKER("ListJobs"), "{\"limit\":0}", 0), INVALID, "limit");
    assert_error(call(f, TRACKER("ListJobs"), "{\"before_id\":0}", 0), INVALID, "before_id");
}

static void test_large_jobs_make_more_pages_not_larger_ones(void **state)
{
    struct fx *f = *state;
    /* 20 jobs of 300 KB metadata: pages of at most 1 MiB, 3 such jobs. */
    for (uint64_t id = 1; id <= 20; id++)
        add_job(f, id, 1000, "big", 1000.0, 300 * 1000);
    uint64_t ids[32];
    size_t pages;
    assert_int_equal(list_ids(f, "{}", ids, 32, &pages), 20);
    assert_int_equal(pages, 7);
    for (size_t i = 0; i < 20; i++)
        assert_int_equal(ids[i], 20 - i);
}

/* ---- the tables and the IDL ---- */

/* "name: ?type" -> the table's view of it. */
static void idl_param(const char *decl, size_t len, char *name, size_t nsize, char *type, size_t tsize,
                      bool *required)
{
    const char *colon = memchr(decl, ':', len);
    assert_non_null(colon);
    snprintf(name, nsize, "%.*s", (int)(colon - decl), decl);
    const char *t = colon + 1;
    while (*t == ' ')
        t++;
    *required = *t != '?';
    if (*t == '?')
        t++;
    snprintf(type, tsize, "%.*s", (int)(decl + len - t), t);
}

static const char *ptype_name(const struct rt_param *p)
{
    static const char *const names[] = {"bool", "int", "float", "string", "object", "int", "[]string"};
    return p->choices ? "enum" : names[p->type];
}

/* The IDL's spelling of a type, as the table checks it. */
static const char *idl_kind(const char *type)
{
    if (type[0] == '(')
        return "enum";
    if (isupper((unsigned char)type[0]) || strcmp(type, "object") == 0)
        return "object";
    return type;
}

static void check_interface(const char *idl, const char *iface)
{
    size_t methods = 0;
    for (const char *m = strstr(idl, "\nmethod "); m; m = strstr(m + 1, "\nmethod ")) {
        const char *name = m + 8, *open = strchr(name, '(');
        char mname[64];
        snprintf(mname, sizeof(mname), "%.*s", (int)(open - name), name);
        const struct rt_method *found = NULL;
        for (const struct rt_method_table *const *t = rt_method_tables; *t; t++)
            for (size_t i = 0; strcmp((*t)->interface, iface) == 0 && i < (*t)->n; i++)
                if (strcmp((*t)->methods[i].name, mname) == 0)
                    found = &(*t)->methods[i];
        if (!found)
            fail_msg("%s.%s is in the IDL but not in a method table", iface, mname);
        /* Parameters: split at commas outside an enum's parentheses. */
        size_t nparams = 0;
        int depth = 0;
        const char *p = open + 1;
        for (const char *q = p;; q++) {
            if (*q == '(')
                depth++;
            bool end = (*q == ')' && depth == 0) || (*q == ',' && depth == 0);
            if (*q == ')' && depth > 0)
                depth--;
            if (!end)
                continue;
            while (p < q && strchr(" \n", *p))
                p++;
            size_t len = (size_t)(q - p);
            while (len && strchr(" \n", p[len - 1]))
                len--;
            if (len) {
                char pname[64], ptype[128];
                bool required;
                idl_param(p, len, pname, sizeof(pname), ptype, sizeof(ptype), &required);
                const struct rt_param *tp = &found->params[nparams++];
                if (!tp->name || strcmp(tp->name, pname) != 0 || tp->required != required ||
                    strcmp(ptype_name(tp), idl_kind(ptype)) != 0)
                    fail_msg("%s.%s parameter %s: the IDL says %s%s, the table %s", iface, mname, pname,
                             required ? "" : "?", ptype, tp->name ? ptype_name(tp) : "nothing");
            }
            if (*q == ')')
                break;
            p = q + 1;
        }
        if (nparams < RT_METHOD_MAX_PARAMS && found->params[nparams].name)
            fail_msg("%s.%s: the table has %s, the IDL does not", iface, mname, found->params[nparams].name);
        methods++;
    }
    size_t in_tables = 0;
    for (const struct rt_method_table *const *t = rt_method_tables; *t; t++)
        if (strcmp((*t)->interface, iface) == 0)
            in_tables += (*t)->n;
    assert_int_equal(methods, in_tables);
}

static void test_tables_match_the_idl(void **state)
{
    (void)state;
    /* Decoded arguments fit the call's buffer, each member inside its struct. */
    for (const struct rt_method_table *const *t = rt_method_tables; *t; t++)
        for (size_t i = 0; i < (*t)->n; i++) {
            const struct rt_method *m = &(*t)->methods[i];
            assert_true(m->args_size <= RT_METHOD_MAX_ARGS);
            for (const struct rt_param *p = m->params; m->args_size && p < m->params + RT_METHOD_MAX_PARAMS && p->name;
                 p++)
                assert_true(p->off < m->args_size);
        }
    check_interface(rt_idl_resource_tracker, RT_VL_INTERFACE);
    check_interface(rt_idl_varlink_service, "org.varlink.service");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_parameters_checked_before_handlers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unclaimed_descriptors_are_closed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_jobs_pages_and_filters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_jobs_make_more_pages_not_larger_ones, setup, teardown),
        cmocka_unit_test(test_tables_match_the_idl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
