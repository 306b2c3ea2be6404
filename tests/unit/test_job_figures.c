/* The per-job figure table holds together: what the writers and readers
 * that loop over it take for granted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "rt/job_figures.h"
#include "rt/sample_csv.h"
#include "store/figures.h"

#include <string.h>

static void test_samples(void **state)
{
    (void)state;
    bool slot_used[RT_FIG_NUMS] = {[0] = true, [1] = true, [2] = true, [11] = true}; /* the record's frame */
    bool csv_used[RT_CSV_COLUMNS + 1] = {false};
    const char *last_json = "";
    for (size_t i = 0; i < rt_fig_nsamples; i++) {
        const struct rt_fig_sample *r = &rt_fig_samples[i];
        assert_int_equal(rt_fig_sample_find(r->name), (int)i);
        assert_true(r->slot < RT_FIG_NUMS && !slot_used[r->slot]);
        slot_used[r->slot] = true;
        if (r->csv) {
            assert_true(r->csv > RT_CSV_PID_COLUMN && r->csv <= RT_CSV_COLUMNS && !csv_used[r->csv]);
            csv_used[r->csv] = true;
        }
        if (r->json) { /* samples list their keys sorted; the splicer takes them in this order */
            assert_true(strcmp(last_json, r->json) < 0);
            assert_true(strncmp(r->json, "process_", 8) == 0 && strcmp(r->json, "process_count") != 0);
            last_json = r->json;
        } else {
            assert_null(r->now); /* not in samples, not live either */
        }
        assert_true(r->type == RT_FT_F64 || r->places == 0);
    }
    for (size_t c = RT_CSV_PID_COLUMN + 1; c <= RT_CSV_COLUMNS; c++)
        assert_true(csv_used[c]);
}

static void test_totals(void **state)
{
    (void)state;
    for (size_t i = 0; i < rt_fig_ntotals; i++) {
        const struct rt_fig_total *t = &rt_fig_totals[i];
        assert_int_equal(rt_fig_total_find(t->key), (int)i);
        if (t->rule == RT_RULE_PER_SEC) {
            assert_true(t->src < 0 && rt_fig_total_find(t->of) >= 0);
            continue;
        }
        assert_true(t->src >= 0 && (size_t)t->src < rt_fig_nsamples);
        assert_true(t->src2 < (int)rt_fig_nsamples);
        if (t->rule == RT_RULE_TIME_MEAN) /* over the time its gate was on */
            assert_true(rt_fig_samples[t->src].gate != 0);
        if (t->at_least)
            assert_true(rt_fig_total_find(t->at_least) >= 0);
        if (t->prom)
            assert_true(t->prom_type && t->prom_help);
        assert_true(!t->stat || t->title);
        for (size_t k = 0; k < i; k++) {
            assert_true(!t->stat || !rt_fig_totals[k].stat || strcmp(t->stat, rt_fig_totals[k].stat) != 0);
            assert_true(!t->journal || !rt_fig_totals[k].journal || strcmp(t->journal, rt_fig_totals[k].journal));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samples),
        cmocka_unit_test(test_totals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
