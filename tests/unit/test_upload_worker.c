/* The worker with the API unreachable (127.0.0.1 port 1, refused at once):
 * rows spool, failures back off, no token means nothing at all, shutdown is
 * bounded, and a new worker resumes the job from the spool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "system/log.h"
#include "rt/sample_csv.h"
#include "rt/util.h"
#include "upload/spool.h"
#include "upload/upload.h"
#include "upload/upload_job.h"

static char root[64], spool[96];

static int setup(void **state)
{
    (void)state;
    rt_log_init(RT_LOG_STDERR, LOG_ERR);
    strcpy(root, "/tmp/rt-worker-XXXXXX");
    if (!mkdtemp(root))
        return -1;
    snprintf(spool, sizeof(spool), "%s/spool", root);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char *cmd = rt_xasprintf("rm -rf %s", root);
    int rc = system(cmd);
    free(cmd);
    return rc;
}

static struct rt_upload_worker *worker_cap(const char *default_token, uint64_t cap)
{
    struct rt_upload_config cfg = {
        .spool_max_bytes = cap,
        .spool_dir = spool,
        .api_url = "http://127.0.0.1:1",
        .default_token = default_token,
        .upload_interval_ms = 100,
        .backoff_base_ms = 20,
        .backoff_max_ms = 80,
        .connect_timeout_ms = 1000,
        .request_timeout_ms = 1000,
    };
    struct rt_upload_worker *w = rt_upload_worker_new(&cfg);
    assert_non_null(w);
    return w;
}

static struct rt_upload_worker *worker(const char *default_token) { return worker_cap(default_token, 0); }

static size_t count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static void wait_status(struct rt_upload_worker *w, uint64_t id, unsigned min_failures, struct rt_upload_status *st)
{
    uint64_t deadline = rt_mono_ns() + 30 * RT_NSEC_PER_SEC;
    do {
        rt_upload_job_status(w, id, st);
        if (st->failures >= min_failures)
            return;
        usleep(10000);
    } while (rt_mono_ns() < deadline);
    fail_msg("job %llu: %u failures after 30 s", (unsigned long long)id, st->failures);
}

static void test_backoff(void **state)
{
    (void)state;
    assert_int_equal(rt_upload_backoff_ms(1000, 300000, 1, 0), 500);
    assert_int_equal(rt_upload_backoff_ms(1000, 300000, 1, 500), 1000);
    assert_int_equal(rt_upload_backoff_ms(1000, 300000, 3, 0), 2000);
    assert_int_equal(rt_upload_backoff_ms(1000, 300000, 3, 2000), 4000);
    assert_int_equal(rt_upload_backoff_ms(1000, 300000, 40, 0), 150000); /* capped, no overflow */
    assert_int_equal(rt_upload_backoff_ms(1000, 300000, 40, UINT64_MAX), 150000 + UINT64_MAX % 150001);
    for (uint64_t r = 0; r < 5000; r += 7) {
        uint64_t d = rt_upload_backoff_ms(1000, 300000, 5, r);
        assert_true(d >= 8000 && d <= 16000);
    }
}

static void test_no_token_nothing(void **state)
{
    (void)state;
    struct rt_upload_worker *w = worker(NULL);
    assert_int_equal(rt_upload_job_begin(w, 1, NULL, NULL), 0);
    assert_int_equal(rt_upload_job_begin(w, 2, "", NULL), 0);
    rt_upload_job_rows(w, 1, "1,2\n", 4);
    rt_upload_job_end(w, 1, 0);
    struct rt_upload_status st;
    rt_upload_job_status(w, 1, &st);
    assert_false(st.tracked);
    assert_int_equal(count_entries(spool), 0);
    rt_upload_worker_free(w);
    struct stat sb;
    assert_int_equal(stat(spool, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
}

static void test_spool_retry_resume(void **state)
{
    (void)state;
    struct rt_upload_worker *w = worker("default-token");
    struct json_object *f = json_tokener_parse("{\"job_name\":\"t\"}");
    assert_int_equal(rt_upload_job_begin(w, 5, NULL, f), 0); /* falls back to the default token */
    json_object_put(f);
    static const char rows[] = "1,a\n2,b\n";
    rt_upload_job_rows(w, 5, rows, sizeof(rows) - 1);
    rt_upload_job_rows(w, 99, rows, sizeof(rows) - 1); /* unknown job: ignored */
    rt_upload_job_rows(w, 5, rows, 0);
    rt_upload_job_rows(w, 5, NULL, 4);
    struct rt_upload_status st;
    wait_status(w, 5, 3, &st);
    assert_true(st.tracked);
    assert_string_equal(st.run_id, "");
    assert_true(rt_str_starts_with(st.last_error, "start run: "));
    assert_int_equal(st.batches_sent, 0);
    assert_true(st.batches_pending >= 1);
    assert_int_equal(st.bytes_pending > 0, 1);

    uint64_t t0 = rt_mono_ns();
    rt_upload_worker_stop(w, 300);
    uint64_t took = (rt_mono_ns() - t0) / 1000000;
    assert_true(took < 5000);
    rt_upload_worker_stop(w, 300); /* idempotent */
    rt_upload_job_rows(w, 5, "3,c\n", 4); /* after stop: still spooled for the next start */
    rt_upload_worker_free(w);

    w = worker(NULL);
    uint64_t *ids;
    size_t n = rt_upload_resumed_running(w, &ids);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 5);
    free(ids);
    rt_upload_job_status(w, 5, &st);
    assert_true(st.tracked);
    assert_false(st.ended);
    assert_true(st.batches_pending >= 1);
    /* Resume (no token at hand and no default: the spooled one is used), add a
     * row, end: the job keeps retrying its run, nothing is lost. */
    assert_int_equal(rt_upload_job_begin(w, 5, NULL, NULL), 0);
    rt_upload_job_rows(w, 5, "4,d", 3); /* unterminated: the newline is added */
    rt_upload_job_end(w, 5, 1);
    assert_int_equal(rt_upload_job_begin(w, 5, "tok", NULL), -EEXIST);
    wait_status(w, 5, 2, &st);
    assert_true(st.ended);
    rt_upload_worker_free(w);

    /* Everything is still in the spool, in order, once. */
    char dir[128];
    snprintf(dir, sizeof(dir), "%s/5", spool);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(dfd >= 0);
    struct rt_upload_job *j = rt_upload_job_load(AT_FDCWD, dir);
    assert_null(j); /* not a job id: the loader wants a name under the spool */
    int sfd = open(spool, O_RDONLY | O_DIRECTORY);
    j = rt_upload_job_load(sfd, "5");
    assert_non_null(j);
    assert_true(j->ended);
    assert_int_equal(j->exit_code, 1);
    assert_string_equal(j->token, "default-token");
    char all[256] = "";
    for (size_t i = 0; i < j->n_pending; i++) {
        char name[32], *gz, *plain;
        size_t len, plen;
        rt_spool_batch_name(j->pending[i].seq, name);
        assert_int_equal(rt_spool_read_file(j->dirfd, name, &gz, &len), 0);
        assert_int_equal(rt_gunzip(gz, len, &plain, &plen), 0);
        assert_true(rt_str_starts_with(plain, RT_CSV_HEADER));
        strncat(all, plain + strlen(RT_CSV_HEADER) + 1, sizeof(all) - strlen(all) - 1);
        free(gz);
        free(plain);
    }
    assert_string_equal(all, "1,a\n2,b\n3,c\n4,d\n");
    rt_upload_job_destroy(j);
    close(sfd);
    close(dfd);
}

static size_t count_batches(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strstr(e->d_name, ".csv.gz") != NULL;
    if (d)
        closedir(d);
    return n;
}

static void wait_pending(struct rt_upload_worker *w, uint64_t id, uint64_t min, struct rt_upload_status *st)
{
    uint64_t deadline = rt_mono_ns() + 30 * RT_NSEC_PER_SEC;
    do {
        rt_upload_job_status(w, id, st);
        if (st->batches_pending >= min)
            return;
        rt_upload_job_rows(w, id, "9,z\n", 4);
        usleep(50000);
    } while (rt_mono_ns() < deadline);
    fail_msg("job %llu: %llu batches pending after 30 s", (unsigned long long)id,
             (unsigned long long)st->batches_pending);
}

/* Over the cap with meta.json unwritable: a drop that cannot be recorded is
 * not made (its file deleted unrecorded would be resent or its key reused
 * after a restart); once meta.json can be written, the drops happen. */
static void test_cap_drop_needs_meta(void **state)
{
    (void)state;
    struct rt_upload_worker *w = worker_cap("tok", 1);
    assert_int_equal(rt_upload_job_begin(w, 6, NULL, NULL), 0);
    char dir[128], tmp[160];
    snprintf(dir, sizeof(dir), "%s/6", spool);
    snprintf(tmp, sizeof(tmp), "%s/.meta.json.tmp", dir);
    assert_int_equal(mkdir(tmp, 0700), 0); /* the atomic write's open fails: EISDIR */
    struct rt_upload_status st;
    wait_pending(w, 6, 4, &st);
    /* Rows stop: once the open rows are sealed, every pending batch is a file. */
    uint64_t deadline = rt_mono_ns() + 30 * RT_NSEC_PER_SEC;
    while (rt_upload_job_status(w, 6, &st), st.batches_pending != count_batches(dir)) {
        assert_true(rt_mono_ns() < deadline);
        usleep(20000);
    }
    assert_true(st.batches_pending >= 4);
    assert_int_equal(st.batches_dropped, 0);

    assert_int_equal(rmdir(tmp), 0);
    deadline = rt_mono_ns() + 30 * RT_NSEC_PER_SEC;
    do {
        rt_upload_job_rows(w, 6, "9,z\n", 4);
        usleep(50000);
        rt_upload_job_status(w, 6, &st);
    } while (st.batches_dropped < 3 && rt_mono_ns() < deadline);
    assert_true(st.batches_dropped >= 3);
    /* The last rows are sealed and dropped too (cap 1 byte). */
    while (rt_upload_job_status(w, 6, &st), st.batches_pending != 0) {
        assert_true(rt_mono_ns() < deadline);
        usleep(20000);
    }
    rt_upload_worker_free(w);
    assert_int_equal(count_batches(dir), 0);
    int sfd = open(spool, O_RDONLY | O_DIRECTORY);
    struct rt_upload_job *j = rt_upload_job_load(sfd, "6");
    assert_non_null(j);
    assert_int_equal(j->n_pending, 0);
    assert_true(j->dropped.n >= st.batches_dropped);
    rt_upload_job_destroy(j);
    close(sfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_no_token_nothing),
        cmocka_unit_test(test_spool_retry_resume),
        cmocka_unit_test(test_cap_drop_needs_meta),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
