/* The record log (daemon/jobs/record_log.c): entries appended as lines,
 * replayed as the last entry of each job (its metadata from the first), a
 * line cut short or no entry skipped, emptied. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "jobs/record_log.h"
#include "rt/json.h"
#include "rt/util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct seen {
    int n;
    uint64_t id[4];
    char state[4][16];
    char team[4][16];
};

static void collect(void *ctx, uint64_t id, struct json_object *record, struct json_object *md)
{
    struct seen *s = ctx;
    assert_true(s->n < 4);
    s->id[s->n] = id;
    snprintf(s->state[s->n], sizeof(s->state[0]), "%s", rt_json_get_string(record, "state"));
    const char *team = md ? rt_json_get_string(md, "team") : NULL;
    snprintf(s->team[s->n], sizeof(s->team[0]), "%s", team ? team : "-");
    s->n++;
}

static struct json_object *record(const char *state)
{
    struct json_object *r = json_object_new_object();
    json_object_object_add(r, "state", json_object_new_string(state));
    return r;
}

static off_t log_size(int dfd)
{
    struct stat st;
    return fstatat(dfd, "records.log", &st, 0) == 0 ? st.st_size : -1;
}

static void test_replay_last_entry_of_each_job(void **state)
{
    (void)state;
    char dir[] = "/tmp/rt-reclog-XXXXXX";
    assert_non_null(mkdtemp(dir));
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct rt_record_log l;
    assert_int_equal(rt_record_log_open(&l, dfd, 0600), 0);
    assert_false(l.dirty);
    struct json_object *md = json_object_new_object();
    json_object_object_add(md, "team", json_object_new_string("t7"));
    struct json_object *running = record("running"), *finished = record("finished");
    assert_int_equal(rt_record_log_append(&l, 7, running, md), 0);
    assert_int_equal(rt_record_log_append(&l, 8, running, NULL), 0);
    assert_int_equal(rt_record_log_append(&l, 7, finished, NULL), 0);
    assert_true(l.dirty);
    rt_record_log_close(&l);
    /* No entry, then a line a crash cut short. */
    int fd = openat(dfd, "records.log", O_WRONLY | O_APPEND);
    const char junk[] = "[1,2]\n{\"id\":9,\"record\":{\"state\":\"run";
    assert_int_equal(write(fd, junk, sizeof(junk) - 1), (ssize_t)(sizeof(junk) - 1));
    close(fd);

    assert_int_equal(rt_record_log_open(&l, dfd, 0600), 0);
    assert_true(l.dirty);
    struct seen s = {0};
    rt_record_log_replay(&l, collect, &s);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.id[0], 7);
    assert_string_equal(s.state[0], "finished");
    assert_string_equal(s.team[0], "t7"); /* the metadata of its first entry */
    assert_int_equal(s.id[1], 8);
    assert_string_equal(s.state[1], "running");
    assert_string_equal(s.team[1], "-");
    assert_int_equal(rt_record_log_clear(&l), 0);
    assert_false(l.dirty);
    assert_int_equal(log_size(dfd), 0);
    s.n = 0;
    rt_record_log_replay(&l, collect, &s);
    assert_int_equal(s.n, 0);
    rt_record_log_close(&l);

    json_object_put(md);
    json_object_put(running);
    json_object_put(finished);
    close(dfd);
    char *cmd = rt_xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay_last_entry_of_each_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
