/* The per-user log budget (daemon/system/user_log.c): a burst, then a few a
 * second per uid, each uid on its own; what is suppressed is said once per
 * summary period, and when is known in advance (the main loop sleeps until
 * then); idle entries are forgotten. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "rt/util.h"
#include "system/user_log.h"

#define SEC RT_NSEC_PER_SEC

struct said {
    unsigned n;
    uid_t uid;
    unsigned count;
    double secs;
};

static void say(uid_t uid, unsigned count, double secs, void *ctx)
{
    struct said *s = ctx;
    s->n++;
    s->uid = uid;
    s->count = count;
    s->secs = secs;
}

static unsigned taken(struct rt_user_log *t, uid_t uid, unsigned tries, uint64_t now)
{
    unsigned n = 0;
    for (unsigned i = 0; i < tries; i++)
        n += rt_user_log_take(t, uid, now);
    return n;
}

static void test_burst_then_rate_per_uid(void **state)
{
    (void)state;
    struct rt_user_log t = {0};
    uint64_t t0 = 1000 * SEC;
    assert_int_equal(taken(&t, 1001, 500, t0), RT_USER_LOG_BURST);
    /* Another user keeps its own burst. */
    assert_int_equal(taken(&t, 1002, 3, t0), 3);
    /* 5 s later: 5 more for 1001, whatever it asks. */
    assert_int_equal(taken(&t, 1001, 500, t0 + 5 * SEC), 5 * RT_USER_LOG_PER_SEC);
    rt_user_log_free(&t);
}

static void test_summary_once_per_period(void **state)
{
    (void)state;
    struct rt_user_log t = {0};
    struct said s = {0};
    uint64_t t0 = 1000 * SEC;
    assert_true(rt_user_log_due(&t) == UINT64_MAX);
    taken(&t, 1001, RT_USER_LOG_BURST, t0);
    assert_true(rt_user_log_due(&t) == UINT64_MAX); /* nothing suppressed: nothing to say */
    taken(&t, 1001, 40, t0);
    assert_true(rt_user_log_due(&t) == t0 + RT_USER_LOG_SUMMARY_SECS * SEC);
    rt_user_log_summaries(&t, t0 + 5 * SEC, say, &s);
    assert_int_equal(s.n, 0); /* not yet a period */
    rt_user_log_summaries(&t, t0 + RT_USER_LOG_SUMMARY_SECS * SEC, say, &s);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.uid, 1001);
    assert_int_equal(s.count, 40);
    assert_true(s.secs >= RT_USER_LOG_SUMMARY_SECS);
    assert_true(rt_user_log_due(&t) == UINT64_MAX);
    rt_user_log_summaries(&t, t0 + 2 * RT_USER_LOG_SUMMARY_SECS * SEC, say, &s);
    assert_int_equal(s.n, 1); /* nothing more suppressed: nothing said */
    /* Quiet and refilled: forgotten. */
    assert_int_equal(t.n, 0);
    rt_user_log_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_then_rate_per_uid),
        cmocka_unit_test(test_summary_once_per_period),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
