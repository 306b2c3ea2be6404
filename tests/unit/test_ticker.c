/* Deadlines stay on the grid and late ticks are skipped, not replayed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "rt/util.h"
#include "sampler/ticker.h"

static void test_grid(void **state)
{
    (void)state;
    struct rt_ticker t;
    rt_ticker_init(&t, 1000, 5000);
    assert_int_equal(t.deadline_ns, 6000);
    rt_ticker_advance(&t, 6010); /* a tick that ran 10 ns late */
    assert_int_equal(t.deadline_ns, 7000);
    rt_ticker_advance(&t, 7999);
    assert_int_equal(t.deadline_ns, 8000);
    assert_int_equal(t.skipped, 0);
}

static void test_skip_when_late(void **state)
{
    (void)state;
    struct rt_ticker t;
    rt_ticker_init(&t, 1000, 0);
    rt_ticker_advance(&t, 3500); /* stalled for 2.5 intervals */
    assert_int_equal(t.deadline_ns, 4000);
    assert_int_equal(t.skipped, 2);
}

static void test_sleep_reaches_deadline(void **state)
{
    (void)state;
    struct rt_ticker t;
    uint64_t start = rt_mono_ns();
    rt_ticker_init(&t, 20 * 1000 * 1000, start);
    for (int i = 0; i < 5; i++) {
        rt_ticker_sleep(&t);
        uint64_t now = rt_mono_ns();
        assert_true(now >= t.deadline_ns);
        rt_ticker_advance(&t, now);
    }
    /* Five ticks of 20 ms: no drift accumulates beyond the last deadline. */
    assert_int_equal(t.deadline_ns, start + (6 + t.skipped) * 20 * 1000 * 1000ULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid),
        cmocka_unit_test(test_skip_when_late),
        cmocka_unit_test(test_sleep_reaches_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
