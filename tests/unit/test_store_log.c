/* The sample store's building blocks: a JSON text as template + numbers
 * (exact both ways), sealed blocks (columns, CSV columns alone), and the
 * log of records with its hot file: reopened, sealed, torn, damaged, held
 * back while the disk is full. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../gpu/gpu_test.h"
#include "store/frame.h"
#include "store/seglog.h"
#include "store/textcode.h"

#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>

static void roundtrip(const char *text)
{
    struct rt_buf tmpl = {0}, out = {0};
    struct rt_i64s nums = {0};
    assert_true(rt_textcode_split(text, strlen(text), &tmpl, &nums));
    assert_int_equal(rt_textcode_count(tmpl.p, tmpl.len), nums.n);
    assert_true(rt_textcode_join(tmpl.p, tmpl.len, nums.v, nums.n, &out));
    rt_buf_byte(&out, 0);
    assert_string_equal((const char *)out.p, text);
    /* One number too few or too many does not fit. */
    if (nums.n) {
        out.len = 0;
        assert_false(rt_textcode_join(tmpl.p, tmpl.len, nums.v, nums.n - 1, &out));
    }
    rt_buf_free(&tmpl);
    rt_buf_free(&out);
    rt_i64s_free(&nums);
}

static void test_textcode_exact(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "{}", "[]", "0", "-1", "{\"a\":1.0,\"b\":-0.5,\"c\":0.0,\"d\":12.345678,\"e\":1.5e3}",
        "{\"n\":-0,\"m\":-0.0,\"k\":1.50,\"x\":0.000001,\"y\":9223372036854775807,\"z\":-9223372036854775808}",
        "{\"big\":18446744073709551615,\"exp\":1e-08,\"lead\":01,\"s\":\"12.5 and -3\",\"e\":\"\\\"9\\\\\"}",
        "[1,2,3,4.25,5.125,-6.0625,9000000000000.5,9000000000001.5,true,false,null]",
        "{\"cpu\":{\"per_core_pct\":[12.34,100.0,0.0,99.99],\"utime_secs\":3.7}}",
        "\"only a string with 1.5 inside\"", "{\"k1\":[[1],[2.5,[-3]]],\"2k\":{\"3\":4}}",
    };
    for (size_t i = 0; i < RT_ARRAY_SIZE(texts); i++)
        roundtrip(texts[i]);
    srand(3);
    char buf[256];
    for (int i = 0; i < 20000; i++) {
        double v = ((double)rand() / RAND_MAX - 0.5) * pow(10, rand() % 16 - 4);
        snprintf(buf, sizeof(buf), "[%.*f,%d,%.17g,%.3f]", rand() % 8, v, rand() - RAND_MAX / 2, v, v);
        roundtrip(buf);
    }
    /* Marker bytes in a text: not usable. */
    struct rt_buf t = {0};
    struct rt_i64s n = {0};
    assert_false(rt_textcode_split("[1,\x01]", 5, &t, &n));
    rt_buf_free(&t);
    rt_i64s_free(&n);
}

static void cols_first_half(const uint8_t *tmpl, size_t tlen, size_t ncols, uint8_t *flags)
{
    (void)tmpl;
    (void)tlen;
    for (size_t c = 0; c < ncols / 2; c++)
        flags[c] = 1;
}

static void test_frame(void **state)
{
    (void)state;
    enum { N = 300, C = 6 };
    static int64_t v[N][C];
    struct rt_rec recs[N];
    srand(5);
    for (size_t i = 0; i < N; i++) {
        v[i][0] = (int64_t)i * 1000000;                       /* scale 6 */
        v[i][1] = rand() % 100;
        v[i][2] = i % 7 == 0 ? INT64_MIN : INT64_MAX - (int64_t)i;
        v[i][3] = -(int64_t)(rand() % 1000) * 10;
        v[i][4] = 42;
        v[i][5] = (int64_t)rand() * rand();
        bool other = i >= 200 && i < 220; /* a run with another template */
        recs[i] = (struct rt_rec){.index = 1000 + i + (i >= 250 ? 5 : 0), /* a gap */
                                  .tmpl = (const uint8_t *)(other ? "tmpl-B" : "tmpl-A"), .tlen = 6,
                                  .v = v[i], .n = other ? C - 1 : C};
    }
    struct rt_buf img = {0};
    rt_frame_encode(recs, N, cols_first_half, &img);
    uint64_t first;
    uint32_t span;
    assert_true(rt_frame_header(img.p, img.len, &first, &span));
    assert_int_equal(first, 1000);
    assert_int_equal(span, N + 5);
    struct rt_frame f = {0}; /* every decode below into it: its buffers are kept */
    for (int csv_only = 0; csv_only < 2; csv_only++) {
        assert_true(rt_frame_decode(img.p, img.len, csv_only, &f));
        int64_t vb[C];
        struct rt_rec r;
        for (size_t i = 0; i < N; i++) {
            assert_true(rt_frame_get(&f, recs[i].index, vb, C, &r));
            assert_int_equal(r.n, recs[i].n);
            assert_memory_equal(r.tmpl, recs[i].tmpl, 6);
            for (size_t c = 0; c < r.n; c++) /* decoded for CSV, the others are not there */
                assert_true((csv_only && c >= r.n / 2) || vb[c] == v[i][c]);
        }
        assert_false(rt_frame_get(&f, 1252, vb, C, &r)); /* in the gap */
    }
    /* Any damaged byte is caught. */
    for (size_t k = 0; k < img.len; k += 7) {
        img.p[k] ^= 0x5a;
        if (rt_frame_decode(img.p, img.len, false, &f)) {
            /* A flipped bit that zlib's check does not see would be a miss. */
            fail_msg("damage at byte %zu not detected", k);
        }
        assert_int_equal(f.nruns, 0);
        img.p[k] ^= 0x5a;
    }
    /* The frame decodes whole again after all that. */
    int64_t vb[C];
    struct rt_rec r;
    assert_true(rt_frame_decode(img.p, img.len, false, &f));
    assert_true(rt_frame_get(&f, recs[N - 1].index, vb, C, &r));
    assert_int_equal(vb[r.n - 1], v[N - 1][r.n - 1]);
    rt_frame_free(&f);
    rt_buf_free(&img);
}

/* ---- the log ---- */

static char dir[64];
static int dirfd_;
static struct rt_store_health health = {PTHREAD_MUTEX_INITIALIZER, false, false};

static int log_setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/rt-seglog-XXXXXX");
    assert_non_null(mkdtemp(dir));
    dirfd_ = open(dir, O_RDONLY | O_DIRECTORY);
    return 0;
}

static int log_teardown(void **state)
{
    (void)state;
    close(dirfd_);
    char *cmd = rt_xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    return 0;
}

static void open_log(struct rt_seglog *l, unsigned block, size_t backlog)
{
    struct rt_seglog_opts o = {.dirfd = dirfd_, .prefix = "t-", .what = "test log", .block = block,
                               .mode = 0600, .backlog_max = backlog, .health = &health};
    assert_int_equal(rt_seglog_open(l, &o), 0);
}

static void append(struct rt_seglog *l, uint64_t i, bool hold)
{
    int64_t v[3] = {(int64_t)i, (int64_t)(i * i), -(int64_t)i};
    const char *t = i % 50 < 25 ? "even" : "odd";
    assert_true(rt_seglog_append(l, (const uint8_t *)t, 4, v, 3, hold));
    if (rt_seglog_full(l)) /* as the sampler does, once per tick */
        assert_int_equal(rt_seglog_seal(l), 0);
}

/* Every index in [0, n) reads back (or, in skip, is gone). */
static void check(struct rt_seglog *l, uint64_t n, uint64_t skip_from, uint64_t skip_to)
{
    struct rt_seglog_cursor c;
    rt_seglog_cursor_init(&c, l, false);
    for (uint64_t i = 0; i < n; i++) {
        struct rt_rec r;
        bool got = rt_seglog_cursor_get(&c, i, &r);
        if (i >= skip_from && i < skip_to) {
            assert_false(got);
            continue;
        }
        if (!got)
            fail_msg("record %" PRIu64 " missing", i);
        assert_int_equal(r.n, 3);
        assert_true(r.v[0] == (int64_t)i && r.v[1] == (int64_t)(i * i) && r.v[2] == -(int64_t)i);
        assert_memory_equal(r.tmpl, i % 50 < 25 ? "even" : "odd", 4);
    }
    rt_seglog_cursor_free(&c);
}

static void test_log_blocks_and_reopen(void **state)
{
    (void)state;
    struct rt_seglog l;
    open_log(&l, 64, 1 << 20);
    for (uint64_t i = 0; i < 200; i++)
        append(&l, i, false);
    check(&l, 200, 0, 0);
    size_t nb;
    struct rt_seg_block hot, *b = rt_seglog_blocks(&l, &nb, &hot);
    assert_int_equal(nb, 3); /* 3 x 64 sealed, 8 hot */
    assert_int_equal(hot.first, 192);
    assert_int_equal(hot.count, 8);
    free(b);
    rt_seglog_close(&l);
    open_log(&l, 64, 1 << 20);
    assert_int_equal(rt_seglog_count(&l), 200);
    check(&l, 200, 0, 0);
    for (uint64_t i = 200; i < 230; i++)
        append(&l, i, false);
    assert_int_equal(rt_seglog_seal(&l), 0);
    check(&l, 230, 0, 0);
    /* A reader keeps what it has while the writer seals. */
    struct rt_seglog_cursor c;
    rt_seglog_cursor_init(&c, &l, true);
    struct rt_rec r;
    append(&l, 230, false);
    assert_true(rt_seglog_cursor_get(&c, 230, &r));
    assert_int_equal(rt_seglog_seal(&l), 0);
    assert_true(rt_seglog_cursor_get(&c, 230, &r));
    assert_true(rt_seglog_cursor_get(&c, 229, &r));
    rt_seglog_cursor_free(&c);
    rt_seglog_remove_files(&l);
    rt_seglog_close(&l);
    assert_false(rt_dir_has_entries_at(dirfd_, "."));
}

static off_t file_size(const char *name)
{
    struct stat st;
    return fstatat(dirfd_, name, &st, 0) == 0 ? st.st_size : -1;
}

static void test_log_damage(void **state)
{
    (void)state;
    struct rt_seglog l;
    open_log(&l, 100, 1 << 20);
    for (uint64_t i = 0; i < 160; i++)
        append(&l, i, false);
    rt_seglog_close(&l);
    /* A torn last entry, a damaged entry in the middle of the hot file and a
     * damaged sealed block: each loses only what it touched. */
    off_t hot = file_size("t-100.hot");
    assert_true(hot > 0);
    int fd = openat(dirfd_, "t-100.hot", O_WRONLY | O_APPEND);
    assert_int_equal(write(fd, "\xe5R\x40\0\0\0garbage", 13), 13); /* a header, cut short */
    close(fd);
    fd = openat(dirfd_, "t-100.hot", O_RDWR);
    char byte;
    off_t mid = 16 + (hot - 16) / 2;
    assert_int_equal(pread(fd, &byte, 1, mid), 1);
    byte ^= 0x21;
    assert_int_equal(pwrite(fd, &byte, 1, mid), 1);
    close(fd);
    fd = openat(dirfd_, "t-0.z", O_RDWR);
    assert_int_equal(pread(fd, &byte, 1, file_size("t-0.z") - 3), 1);
    byte ^= 0x21;
    assert_int_equal(pwrite(fd, &byte, 1, file_size("t-0.z") - 3), 1);
    close(fd);
    capture_start();
    open_log(&l, 100, 1 << 20);
    assert_int_equal(file_size("t-100.hot"), hot); /* the torn tail is cut off */
    struct rt_seglog_cursor c;
    rt_seglog_cursor_init(&c, &l, false);
    struct rt_rec r;
    size_t hot_ok = 0;
    for (uint64_t i = 100; i < 160; i++)
        hot_ok += rt_seglog_cursor_get(&c, i, &r);
    assert_true(hot_ok >= 58 && hot_ok < 60); /* one entry (or a template's) lost */
    assert_false(rt_seglog_cursor_get(&c, 5, &r));
    assert_false(rt_seglog_cursor_get(&c, 6, &r));
    rt_seglog_cursor_free(&c);
    char *log = capture_end();
    assert_non_null(strstr(log, "dropping a torn last sample"));
    assert_non_null(strstr(log, "t-100.hot is damaged"));
    assert_non_null(strstr(log, "block t-0.z is damaged"));
    assert_null(strstr(strstr(log, "block t-0.z is damaged") + 1, "block t-0.z is damaged")); /* once */
    free(log);
    /* Appending goes on after the damage. */
    append(&l, 160, false);
    rt_seglog_cursor_init(&c, &l, false);
    assert_true(rt_seglog_cursor_get(&c, 160, &r));
    rt_seglog_cursor_free(&c);
    rt_seglog_remove_files(&l);
    rt_seglog_close(&l);
}

static void test_log_crash_while_sealing(void **state)
{
    (void)state;
    struct rt_seglog l;
    open_log(&l, 1000, 1 << 20);
    for (uint64_t i = 0; i < 40; i++)
        append(&l, i, false);
    /* Copy the hot file aside, seal, and put it back: as if the daemon died
     * between writing the block and removing the hot file. */
    size_t len = 0;
    int fd = openat(dirfd_, "t-0.hot", O_RDONLY);
    char buf[1 << 16];
    len = (size_t)read(fd, buf, sizeof(buf));
    close(fd);
    assert_int_equal(rt_seglog_seal(&l), 0);
    rt_seglog_close(&l);
    fd = openat(dirfd_, "t-0.hot", O_WRONLY | O_CREAT, 0600);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    close(fd);
    open_log(&l, 1000, 1 << 20);
    assert_int_equal(file_size("t-0.hot"), -1);
    assert_int_equal(rt_seglog_count(&l), 40);
    check(&l, 40, 0, 0);
    /* An older hot file that no block holds (a crash before sealing it) is
     * sealed when found. */
    for (uint64_t i = 40; i < 50; i++)
        append(&l, i, false);
    rt_seglog_close(&l);
    fd = openat(dirfd_, "t-50.hot", O_WRONLY | O_CREAT, 0600);
    uint8_t head[16] = "RTHOT1\0\0";
    head[8] = 50;
    assert_int_equal(write(fd, head, 16), 16);
    close(fd);
    open_log(&l, 1000, 1 << 20);
    assert_int_equal(file_size("t-40.hot"), -1);
    assert_true(file_size("t-40.z") > 0);
    check(&l, 50, 0, 0);
    rt_seglog_remove_files(&l);
    rt_seglog_close(&l);
}

static void test_log_backlog(void **state)
{
    (void)state;
    struct rt_seglog l;
    open_log(&l, 1000, 300);
    append(&l, 0, false);
    /* Held records wait in memory and are not readable yet. */
    append(&l, 1, true);
    append(&l, 2, true);
    assert_true(rt_seglog_has_backlog(&l));
    struct rt_seglog_cursor c;
    rt_seglog_cursor_init(&c, &l, false);
    struct rt_rec r;
    assert_true(rt_seglog_cursor_get(&c, 0, &r));
    assert_false(rt_seglog_cursor_get(&c, 1, &r));
    /* Beyond the backlog's limit a record is not kept. */
    int64_t v[3] = {0};
    uint64_t i = 3;
    for (; i < 100; i++) {
        v[0] = (int64_t)i;
        if (!rt_seglog_append(&l, (const uint8_t *)"even", 4, v, 3, true))
            break;
    }
    assert_true(i < 100);
    assert_int_equal(rt_seglog_count(&l), i);
    assert_true(rt_seglog_flush(&l));
    assert_true(rt_seglog_cursor_get(&c, 1, &r));
    assert_true(rt_seglog_cursor_get(&c, 2, &r) && r.v[1] == 4);
    rt_seglog_cursor_free(&c);
    rt_seglog_remove_files(&l);
    rt_seglog_close(&l);
}

/* Once a record is refused for the backlog's limit, none is kept until the
 * backlog is written, not even a smaller one that would fit: one gap in the
 * samples, not scattered ones. */
static void test_log_backlog_refuses_until_written(void **state)
{
    (void)state;
    struct rt_seglog l;
    open_log(&l, 1000, 300);
    append(&l, 0, false);
    int64_t big[20], small[1] = {1};
    for (int k = 0; k < 20; k++)
        big[k] = (int64_t)1 << 60; /* 9 bytes each */
    uint64_t kept = 1;
    while (rt_seglog_append(&l, (const uint8_t *)"even", 4, big, 20, true))
        kept++;
    assert_true(l.o.backlog_max - l.backlog.len > 40); /* room for a small record */
    assert_false(rt_seglog_append(&l, (const uint8_t *)"even", 4, small, 1, true));
    assert_int_equal(rt_seglog_count(&l), kept);
    assert_true(rt_seglog_flush(&l));
    assert_true(rt_seglog_append(&l, (const uint8_t *)"even", 4, small, 1, false));
    assert_int_equal(rt_seglog_count(&l), kept + 1);
    rt_seglog_remove_files(&l);
    rt_seglog_close(&l);
}

/* A sealed log keeps no index of its hot file: a finished job's log is
 * sealed once and kept until retention, and its index had grown to its
 * block (384 KiB a job at 16,384 records). */
static void test_log_sealed_keeps_no_index(void **state)
{
    (void)state;
    struct rt_seglog l;
    open_log(&l, 16384, 1 << 20);
    for (uint64_t i = 0; i < 3000; i++)
        append(&l, i, i % 7 == 0); /* some held back, written with the next */
    assert_true(l.hot_cap >= 3000);
    assert_int_equal(rt_seglog_seal(&l), 0);
    assert_null(l.hot);
    assert_int_equal(l.hot_cap, 0);
    assert_null(l.tmpl_off);
    assert_null(l.tmpl_len);
    assert_int_equal(l.tmpl_cap, 0);
    assert_null(l.pend);
    assert_int_equal(l.backlog.cap, 0);
    assert_int_equal(l.last_tmpl.cap, 0);
    check(&l, 3000, 0, 0);
    /* and it goes on as before */
    for (uint64_t i = 3000; i < 3100; i++)
        append(&l, i, false);
    check(&l, 3100, 0, 0);
    assert_int_equal(rt_seglog_seal(&l), 0);
    check(&l, 3100, 0, 0);
    /* A finished job's list of blocks: its size. */
    rt_seglog_fit(&l);
    assert_int_equal(l.nblocks, 2);
    assert_int_equal(l.blocks_cap, 2);
    check(&l, 3100, 0, 0);
    rt_seglog_remove_files(&l);
    rt_seglog_close(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_textcode_exact),
        cmocka_unit_test(test_frame),
        cmocka_unit_test_setup_teardown(test_log_blocks_and_reopen, log_setup, log_teardown),
        cmocka_unit_test_setup_teardown(test_log_damage, log_setup, log_teardown),
        cmocka_unit_test_setup_teardown(test_log_crash_while_sealing, log_setup, log_teardown),
        cmocka_unit_test_setup_teardown(test_log_backlog, log_setup, log_teardown),
        cmocka_unit_test_setup_teardown(test_log_backlog_refuses_until_written, log_setup, log_teardown),
        cmocka_unit_test_setup_teardown(test_log_sealed_keeps_no_index, log_setup, log_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
