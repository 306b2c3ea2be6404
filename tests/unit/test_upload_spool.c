/* The spool on a real temp directory: sealing rows into gzip batches with a
 * header, torn rows, modes, meta round trip and resuming after a crash. */
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

#include "rt/sample_csv.h"
#include "rt/util.h"
#include "upload/spool.h"
#include "upload/upload_job.h"

static char root[64];
static int root_fd = -1;

static int setup(void **state)
{
    (void)state;
    strcpy(root, "/tmp/rt-spool-XXXXXX");
    assert_non_null(mkdtemp(root));
    root_fd = open(root, O_RDONLY | O_DIRECTORY);
    return root_fd < 0;
}

static int teardown(void **state)
{
    (void)state;
    char *cmd = rt_xasprintf("rm -rf %s", root);
    int rc = system(cmd);
    free(cmd);
    close(root_fd);
    return rc;
}

static void write_file(int dirfd, const char *name, const char *text)
{
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static char *batch_text(int dirfd, uint64_t seq)
{
    char name[32], *gz, *plain;
    size_t len, plen;
    rt_spool_batch_name(seq, name);
    assert_int_equal(rt_spool_read_file(dirfd, name, &gz, &len), 0);
    assert_int_equal(rt_gunzip(gz, len, &plain, &plen), 0);
    free(gz);
    return plain;
}

static void test_seal(void **state)
{
    (void)state;
    int d = rt_spool_open_dir(root_fd, "seal");
    assert_true(d >= 0);
    struct stat st;
    assert_int_equal(fstat(d, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    int fd = rt_spool_open_rows(d, 3);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    const char rows[] = "1,a\n2,b\n3,c"; /* the last row is torn */
    assert_int_equal(write(fd, rows, sizeof(rows) - 1), (ssize_t)sizeof(rows) - 1);
    close(fd);
    uint64_t n = 0, bytes = 0;
    assert_int_equal(rt_spool_seal(d, 3, &n, &bytes), 1);
    assert_int_equal(n, 2);
    assert_int_equal(faccessat(d, "rows.000003", F_OK, 0), -1);
    assert_int_equal(fstatat(d, "000003.csv.gz", &st, 0), 0);
    assert_int_equal((uint64_t)st.st_size, bytes);
    assert_int_equal(st.st_mode & 0777, 0600);
    char *text = batch_text(d, 3);
    char *want = rt_xasprintf("%s\n1,a\n2,b\n", RT_CSV_HEADER);
    assert_string_equal(text, want);
    free(want);
    free(text);
    /* Only a torn row: nothing to send, the file goes. */
    write_file(d, "rows.000004", "9,z");
    assert_int_equal(rt_spool_seal(d, 4, &n, &bytes), 0);
    assert_int_equal(faccessat(d, "rows.000004", F_OK, 0), -1);
    assert_int_equal(faccessat(d, "000004.csv.gz", F_OK, 0), -1);
    /* Missing rows file: an error, not a crash. */
    assert_true(rt_spool_seal(d, 5, &n, &bytes) < 0);
    close(d);
}

static void test_gzip_roundtrip(void **state)
{
    (void)state;
    size_t len = 1 << 20;
    char *big = rt_xmalloc(len);
    for (size_t i = 0; i < len; i++)
        big[i] = (char)('a' + (i * 7919) % 26);
    char *gz, *back;
    size_t gzlen, blen;
    assert_int_equal(rt_gzip(big, len, &gz, &gzlen), 0);
    assert_true(gz[0] == (char)0x1f && gz[1] == (char)0x8b); /* a standard gzip header */
    assert_int_equal(rt_gunzip(gz, gzlen, &back, &blen), 0);
    assert_int_equal(blen, len);
    assert_memory_equal(back, big, len);
    free(back);
    assert_int_equal(rt_gunzip(gz, gzlen / 2, &back, &blen), -EIO); /* truncated */
    assert_int_equal(rt_gunzip("plain", 5, &back, &blen), -EIO);
    free(gz);
    free(big);
}

static void test_atomic_write(void **state)
{
    (void)state;
    int d = rt_spool_open_dir(root_fd, "atomic");
    assert_int_equal(rt_write_file_at(d, "f", "one", 3, 0600, RT_SYNC_FULL), 0);
    assert_int_equal(rt_write_file_at(d, "f", "two!", 4, 0600, RT_SYNC_FULL), 0);
    char *data;
    size_t len;
    assert_int_equal(rt_spool_read_file(d, "f", &data, &len), 0);
    assert_string_equal(data, "two!");
    free(data);
    assert_int_equal(faccessat(d, ".f.tmp", F_OK, 0), -1);
    assert_int_equal(rt_spool_read_file(d, "missing", &data, &len), -ENOENT);
    /* An existing directory with a loose mode is tightened. */
    mkdirat(root_fd, "loose", 0755);
    int l = rt_spool_open_dir(root_fd, "loose");
    struct stat st;
    fstat(l, &st);
    assert_int_equal(st.st_mode & 0777, 0700);
    close(l);
    close(d);
}

static void test_meta_roundtrip_and_resume(void **state)
{
    (void)state;
    int d = rt_spool_open_dir(root_fd, "42");
    struct rt_upload_job *j = rt_upload_job_alloc(42);
    j->token = rt_xstrdup("tok");
    j->run_fields = json_tokener_parse("{\"job_name\":\"x\"}");
    struct rt_s3_creds c = {"AK", "SK", "ST", 1775822400};
    rt_upload_job_set_run(j, "run-9", "s3://bkt/pre/", &c);
    assert_string_equal(j->bucket, "bkt");
    assert_string_equal(j->key_prefix, "pre");
    rt_u64_list_add(&j->sent, 2);
    rt_u64_list_add(&j->sent, 0);
    rt_u64_list_add(&j->sent, 2);
    rt_u64_list_add(&j->dropped, 1);
    j->ended = true;
    j->exit_code = 3;
    j->finished_at = 1775822400;
    char *meta = rt_upload_job_meta(j);
    assert_int_equal(rt_write_file_at(d, RT_SPOOL_META, meta, strlen(meta), 0600, RT_SYNC_FULL), 0);
    free(meta);
    rt_upload_job_destroy(j);

    /* Crash leftovers: batch 3 sealed but its rows file not yet removed,
     * batch 2 uploaded but not deleted, rows of 4 never sealed, a .tmp. */
    write_file(d, "rows.000003", "3,c\n");
    int fd = rt_spool_open_rows(d, 3);
    close(fd);
    uint64_t n, bytes;
    assert_int_equal(rt_spool_seal(d, 3, &n, &bytes), 1);
    write_file(d, "rows.000003", "3,c\n");
    write_file(d, "000002.csv.gz", "x");
    write_file(d, "rows.000004", "4,d\n4,e\n");
    write_file(d, "000005.csv.gz.tmp", "half");
    close(d);

    j = rt_upload_job_load(root_fd, "42");
    assert_non_null(j);
    assert_int_equal(j->id, 42);
    assert_string_equal(j->token, "tok");
    assert_string_equal(j->run_id, "run-9");
    assert_string_equal(j->creds.session_token, "ST");
    assert_int_equal(j->creds.expires_at, 1775822400);
    assert_int_equal(j->sent.n, 2);
    assert_int_equal(j->sent.v[0], 0);
    assert_int_equal(j->sent.v[1], 2);
    assert_true(j->ended);
    assert_false(j->resumed_running);
    assert_int_equal(j->exit_code, 3);
    assert_int_equal(j->n_pending, 2);
    assert_int_equal(j->pending[0].seq, 3);
    assert_int_equal(j->pending[1].seq, 4);
    assert_int_equal(j->seg, 5);
    char *text = batch_text(j->dirfd, 4);
    char *want = rt_xasprintf("%s\n4,d\n4,e\n", RT_CSV_HEADER);
    assert_string_equal(text, want);
    free(want);
    free(text);
    assert_int_equal(faccessat(j->dirfd, "000002.csv.gz", F_OK, 0), -1);
    assert_int_equal(faccessat(j->dirfd, "rows.000003", F_OK, 0), -1);
    assert_int_equal(faccessat(j->dirfd, "000005.csv.gz.tmp", F_OK, 0), -1);

    /* Finished: the directory goes, meta first. */
    rt_upload_job_remove_files(j, root_fd);
    assert_int_equal(faccessat(root_fd, "42", F_OK, 0), -1);
    rt_upload_job_destroy(j);
}

static void test_load_garbage(void **state)
{
    (void)state;
    /* Not a job directory name: ignored and left alone. */
    mkdirat(root_fd, "lost+found", 0700);
    assert_null(rt_upload_job_load(root_fd, "lost+found"));
    assert_int_equal(faccessat(root_fd, "lost+found", F_OK, 0), 0);
    /* A job directory without meta (finished, or never began): removed. */
    int d = rt_spool_open_dir(root_fd, "7");
    write_file(d, "rows.000000", "1\n");
    close(d);
    assert_null(rt_upload_job_load(root_fd, "7"));
    assert_int_equal(faccessat(root_fd, "7", F_OK, 0), -1);
    /* Corrupt meta without a copy: set aside whole, never deleted. */
    d = rt_spool_open_dir(root_fd, "8");
    write_file(d, RT_SPOOL_META, "{\"token\":");
    write_file(d, "rows.000000", "1\n");
    close(d);
    assert_null(rt_upload_job_load(root_fd, "8"));
    assert_int_equal(faccessat(root_fd, "8", F_OK, 0), -1);
    assert_int_equal(faccessat(root_fd, RT_SPOOL_QUARANTINE "/8/rows.000000", F_OK, 0), 0);
    assert_null(rt_upload_job_load(root_fd, RT_SPOOL_QUARANTINE)); /* passed over */
    assert_int_equal(faccessat(root_fd, RT_SPOOL_QUARANTINE "/8/" RT_SPOOL_META, F_OK, 0), 0);
    /* A running job resumes as running, sequence after what it had; the
     * empty segment a clean stop left (rows.000007) takes no number. */
    d = rt_spool_open_dir(root_fd, "9");
    write_file(d, RT_SPOOL_META, "{\"token\":\"t\",\"sent\":[0,1,\"x\",-4],\"dropped\":[6]}");
    write_file(d, "rows.000007", "");
    close(d);
    struct rt_upload_job *j = rt_upload_job_load(root_fd, "9");
    assert_non_null(j);
    assert_true(j->resumed_running);
    assert_null(j->run_id);
    assert_int_equal(j->sent.n, 2);
    assert_int_equal(j->seg, 7);
    assert_int_equal(j->n_pending, 0);
    assert_int_equal(faccessat(j->dirfd, "rows.000007", F_OK, 0), -1);
    rt_upload_job_destroy(j);
}

static char *sealed_batch(const char *rows, size_t *len)
{
    int d = rt_spool_open_dir(root_fd, "check");
    write_file(d, "rows.000000", rows);
    uint64_t n, bytes;
    assert_int_equal(rt_spool_seal(d, 0, &n, &bytes), 1);
    char *gz;
    assert_int_equal(rt_spool_read_file(d, "000000.csv.gz", &gz, len), 0);
    rt_spool_unlink(d, "000000.csv.gz");
    close(d);
    return gz;
}

/* A batch is checked before its PUT: whatever is not the gzip CSV the spool
 * sealed (a flipped byte, cut short, bytes after it, another shape) is not. */
static void test_check_batch(void **state)
{
    (void)state;
    char row[256] = "", *csv;
    for (int i = 0; i < RT_CSV_COLUMNS; i++)
        strcat(row, i ? ",1" : "1767225600");
    strcat(row, "\n");
    char *rows = rt_xasprintf("%s%s", row, row);
    size_t len, clen;
    char *gz = sealed_batch(rows, &len);
    assert_int_equal(rt_spool_check_batch(gz, len, NULL, NULL), 0);
    assert_int_equal(rt_spool_check_batch(gz, len, &csv, &clen), 0);
    assert_int_equal(clen, strlen(RT_CSV_HEADER) + 1 + strlen(rows));
    free(csv);
    assert_int_equal(rt_spool_check_batch(gz, len - 1, NULL, NULL), -EBADMSG);
    gz[len / 2] ^= 0x55; /* inside the deflate data or its CRC */
    assert_int_equal(rt_spool_check_batch(gz, len, NULL, NULL), -EBADMSG);
    gz[len / 2] ^= 0x55;
    gz[len - 6] ^= 0x01; /* the CRC-32 */
    assert_int_equal(rt_spool_check_batch(gz, len, NULL, NULL), -EBADMSG);
    gz[len - 6] ^= 0x01;
    char *longer = rt_xmalloc(len + 4);
    memcpy(longer, gz, len);
    memcpy(longer + len, "junk", 4);
    assert_int_equal(rt_spool_check_batch(longer, len + 4, NULL, NULL), -EBADMSG);
    free(longer);
    free(gz);
    /* Whole gzip, wrong CSV: a row short of a column, another header. */
    const char *shapes[] = {"1,2,3\n", "", NULL};
    for (size_t i = 0; shapes[i]; i++) {
        char *text = rt_xasprintf("%s\n%s%s", RT_CSV_HEADER, row, shapes[i]);
        assert_int_equal(rt_gzip(text, strlen(text) - (i == 1), &gz, &len), 0); /* i 1: no final newline */
        assert_int_equal(rt_spool_check_batch(gz, len, NULL, NULL), -EBADMSG);
        free(gz);
        free(text);
    }
    char *text = rt_xasprintf("time,x\n%s", row);
    assert_int_equal(rt_gzip(text, strlen(text), &gz, &len), 0);
    assert_int_equal(rt_spool_check_batch(gz, len, NULL, NULL), -EBADMSG);
    free(gz);
    free(text);
    free(rows);
}

static void write_meta(int d, const char *file, const char *run_id)
{
    struct rt_upload_job *j = rt_upload_job_alloc(11);
    j->token = rt_xstrdup("tok");
    rt_upload_job_set_run(j, run_id, "s3://bkt/pre", NULL);
    rt_u64_list_add(&j->sent, 0);
    char *meta = rt_upload_job_meta(j);
    assert_int_equal(rt_write_file_at(d, file, meta, strlen(meta), 0600, RT_SYNC_FULL), 0);
    free(meta);
    rt_upload_job_destroy(j);
}

/* A truncated meta.json: set aside, the job goes on from its copy (and a
 * meta.json written back); the copy damaged too: the directory set aside. */
static void test_damaged_meta(void **state)
{
    (void)state;
    int d = rt_spool_open_dir(root_fd, "11");
    write_meta(d, RT_SPOOL_META, "run-1");
    write_meta(d, RT_SPOOL_META_COPY, "run-1");
    int fd = openat(d, RT_SPOOL_META, O_WRONLY);
    assert_int_equal(ftruncate(fd, 20), 0); /* cut short, as a full disk or a crash of the disk leaves it */
    close(fd);
    write_file(d, "rows.000001", "1,a\n");
    close(d);
    struct rt_upload_job *j = rt_upload_job_load(root_fd, "11");
    assert_non_null(j);
    assert_string_equal(j->token, "tok");
    assert_string_equal(j->run_id, "run-1");
    assert_int_equal(j->seg, 2);
    assert_true(j->resumed_running);
    char *kept;
    size_t len;
    assert_int_equal(rt_spool_read_file(root_fd, RT_SPOOL_QUARANTINE "/11-" RT_SPOOL_META, &kept, &len), 0);
    assert_int_equal(len, 20);
    free(kept);
    rt_upload_job_destroy(j);
    /* meta.json is whole again: no second complaint, nothing more set aside. */
    j = rt_upload_job_load(root_fd, "11");
    assert_non_null(j);
    assert_string_equal(j->run_id, "run-1");
    assert_int_equal(faccessat(root_fd, RT_SPOOL_QUARANTINE "/11-" RT_SPOOL_META ".1", F_OK, 0), -1);
    /* meta.json gone, its copy there: the copy. */
    assert_int_equal(unlinkat(j->dirfd, RT_SPOOL_META, 0), 0);
    rt_upload_job_destroy(j);
    j = rt_upload_job_load(root_fd, "11");
    assert_non_null(j);
    assert_string_equal(j->run_id, "run-1");
    /* Both damaged: the whole directory set aside, its rows with it. */
    write_file(j->dirfd, RT_SPOOL_META, "{\"tok");
    write_file(j->dirfd, RT_SPOOL_META_COPY, "");
    rt_upload_job_destroy(j);
    assert_null(rt_upload_job_load(root_fd, "11"));
    assert_int_equal(faccessat(root_fd, "11", F_OK, 0), -1);
    assert_int_equal(faccessat(root_fd, RT_SPOOL_QUARANTINE "/11/000001.csv.gz", F_OK, 0), 0);
    assert_int_equal(faccessat(root_fd, RT_SPOOL_QUARANTINE "/11/" RT_SPOOL_META_COPY, F_OK, 0), 0);
    /* A finished job's directory (neither file) is still removed. */
    d = rt_spool_open_dir(root_fd, "12");
    write_file(d, "rows.000000", "1\n");
    close(d);
    assert_null(rt_upload_job_load(root_fd, "12"));
    assert_int_equal(faccessat(root_fd, "12", F_OK, 0), -1);
    assert_int_equal(faccessat(root_fd, RT_SPOOL_QUARANTINE "/12", F_OK, 0), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seal),
        cmocka_unit_test(test_gzip_roundtrip),
        cmocka_unit_test(test_atomic_write),
        cmocka_unit_test(test_meta_roundtrip_and_resume),
        cmocka_unit_test(test_load_garbage),
        cmocka_unit_test(test_check_batch),
        cmocka_unit_test(test_damaged_meta),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
