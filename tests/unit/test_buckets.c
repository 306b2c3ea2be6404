/* The report's downsampling (common/buckets.c): a day of samples in a
 * bounded number of points that keep every peak; short runs unchanged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "rt/buckets.h"

#include <math.h>

static void test_short_run_is_kept_as_is(void **state)
{
    (void)state;
    struct rt_buckets b;
    rt_buckets_init(&b, 2, 1000, 5);
    assert_int_equal(b.n, 5);
    for (uint64_t i = 0; i < 5; i++) {
        double v[2] = {(double)i, i == 2 ? NAN : 10.0 * (double)i};
        assert_true(rt_buckets_add(&b, i, 100.0 + (double)i, v));
    }
    double v[2] = {0, 0};
    assert_false(rt_buckets_add(&b, 5, 105, v)); /* beyond the expected samples */
    for (size_t i = 0; i < 5; i++) {
        double t, lo, mean, hi;
        assert_true(rt_bucket_time(&b, i, &t));
        assert_true(t == 100.0 + (double)i);
        assert_true(rt_bucket_value(&b, i, 0, &lo, &mean, &hi));
        assert_true(lo == (double)i && mean == (double)i && hi == (double)i);
        assert_int_equal(rt_bucket_value(&b, i, 1, &lo, &mean, &hi), i != 2); /* unknown stays unknown */
    }
    rt_buckets_free(&b);
}

static void test_a_day_keeps_its_peaks(void **state)
{
    (void)state;
    const uint64_t n = 86400;
    struct rt_buckets b;
    rt_buckets_init(&b, 1, 1000, n);
    assert_int_equal(b.n, 1000);
    for (uint64_t i = 0; i < n; i++) {
        double v = i == 12345 ? 64.0 : i == 777 ? -3.0 : 1.0;
        assert_true(rt_buckets_add(&b, i, (double)i, &v));
    }
    size_t peak = (size_t)(12345ULL * 1000 / n), dip = (size_t)(777ULL * 1000 / n);
    double seen_hi = 0, seen_lo = 0, total = 0;
    for (size_t i = 0; i < b.n; i++) {
        double t, lo, mean, hi;
        assert_true(rt_bucket_time(&b, i, &t));
        assert_true(rt_bucket_value(&b, i, 0, &lo, &mean, &hi));
        assert_true(lo <= mean && mean <= hi);
        assert_true(hi == (i == peak ? 64.0 : 1.0));
        assert_true(lo == (i == dip ? -3.0 : 1.0));
        seen_hi = fmax(seen_hi, hi);
        seen_lo = fmin(seen_lo, lo);
        total += b.t_count[i];
        if (i)
            assert_true(t > b.t_sum[i - 1] / b.t_count[i - 1]); /* times stay in order */
    }
    assert_true(seen_hi == 64.0 && seen_lo == -3.0);
    assert_true(total == (double)n); /* every sample counted once */
    rt_buckets_free(&b);
}

static void test_no_samples(void **state)
{
    (void)state;
    struct rt_buckets b;
    rt_buckets_init(&b, 3, 1000, 0);
    assert_int_equal(b.n, 0);
    double v[3] = {1, 2, 3}, t;
    assert_false(rt_buckets_add(&b, 0, 1, v));
    assert_false(rt_bucket_time(&b, 0, &t));
    rt_buckets_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_short_run_is_kept_as_is),
        cmocka_unit_test(test_a_day_keeps_its_peaks),
        cmocka_unit_test(test_no_samples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
