/* What the NVIDIA pollers read beyond use and memory, against the fake
 * libnvidia-ml.so.1 through the real dlopen path: ECC totals, retired pages,
 * remapped rows, clocks event reasons as time per reason, GPM metrics, MIG
 * instances with their processes, XID events; and that what a device does
 * not give stays unset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../gpu/gpu_test.h"
#include "../gpu/nvml_test.h"
#include "system/log.h"

#define GIB (1024ULL * RT_MIB)

static pid_t p1, p2;

static int setup(void **state)
{
    (void)state;
    p1 = spawn_sleeper();
    p2 = spawn_sleeper();
    config_create();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    reap(p1);
    reap(p2);
    unlink(config_path);
    return 0;
}

/* GPU 0 gives everything; GPU 1 none of the health figures. */
static void write_health(void)
{
    char buf[2048];
    snprintf(buf, sizeof(buf),
             "device\n name=NVIDIA H100 80GB HBM3\n uuid=GPU-h\n util=97\n mem_total=85899345920\n"
             " mem_used=1073741824\n gpm=1\n gpm_sm=3.5\n gpm_occ=2.25\n gpm_tensor=1\n gpm_dram=40\n"
             " ecc_corrected=3\n ecc_uncorrected=1\n retired_sbe=2\n retired_dbe=1\n remapped_corr=4\n"
             " remap_pending=1\n reasons=0xC\n"
             "process\n pid=%d\n vram=1073741824\n sm=97\n"
             "device\n name=NVIDIA T4\n uuid=GPU-t\n util=10\n mem_total=16106127360\n mem_used=0\n"
             " ret.ecc=3\n ret.pages=3\n ret.remap=3\n ret.reasons=3\n ret.events=3\n",
             (int)p1);
    write_config(buf);
}

static const struct rt_gpu_dev *device(struct rt_gpu_devref *refs, size_t n, const char *uuid)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(refs[i].d->uuid, uuid) == 0)
            return refs[i].d;
    return NULL;
}

static void test_health_figures(void **state)
{
    (void)state;
    write_health();
    struct rt_gpu_options o = fast_options();
    struct rt_gpu_collector *c = new_collector(&o);
    assert_true(rt_gpu_collector_wait_polls(c, 3, DEADLINE_SECS));
    struct rt_sample s;
    rt_sample_init(&s);
    rt_gpu_collect(c, &s);
    struct rt_gpu_devref refs[4];
    size_t n = rt_gpu_devices(c, refs, 4);
    assert_int_equal(n, 2);
    assert_true(refs[0].nvidia);
    const struct rt_gpu_dev *h = device(refs, n, "GPU-h"), *t = device(refs, n, "GPU-t");
    assert_non_null(h);
    assert_non_null(t);

    assert_true(h->has_util);
    assert_double_equal(h->util_pct, 97, 1e-9);
    assert_true(h->health.has_ecc);
    assert_int_equal(h->health.ecc_corrected, 3);
    assert_int_equal(h->health.ecc_uncorrected, 1);
    assert_true(h->health.has_retired);
    assert_int_equal(h->health.retired_sbe, 2);
    assert_int_equal(h->health.retired_dbe, 1);
    assert_true(h->health.has_remapped);
    assert_int_equal(h->health.remapped_corr, 4);
    assert_int_equal(h->health.remapped_unc, 0);
    assert_true(h->health.remap_pending);
    assert_false(h->health.remap_failure);
    assert_true(h->health.has_reasons);
    assert_int_equal(h->health.reasons, 0xC);
    /* software power cap (0x4) and hardware slowdown (0x8) held since the second poll */
    assert_true(h->health.throttle_secs[RT_GPU_THROTTLE_POWER] > 0);
    assert_double_equal(h->health.throttle_secs[RT_GPU_THROTTLE_POWER],
                        h->health.throttle_secs[RT_GPU_THROTTLE_HW_SLOWDOWN], 1e-9);
    assert_double_equal(h->health.throttle_secs[RT_GPU_THROTTLE_THERMAL], 0, 1e-12);
    assert_true(h->health.has_events);
    assert_int_equal(h->health.xids, 0);
    /* GPM from two samples a poll apart */
    assert_true(h->gpm.present);
    assert_double_equal(h->gpm.sm_active, 3.5, 1e-9);
    assert_double_equal(h->gpm.sm_occupancy, 2.25, 1e-9);
    assert_double_equal(h->gpm.tensor_active, 1, 1e-9);
    assert_double_equal(h->gpm.dram_bw, 40, 1e-9);
    assert_true(fake_counter("libnvidia-ml.so.1", "gpm_metrics") > 0);
    assert_int_equal(h->n_procs, 1);
    assert_int_equal(h->procs[0].pid, p1);
    assert_true(h->procs[0].has_sm);
    assert_int_equal(h->procs[0].gi, RT_GPU_NO_ID);
    assert_false(h->mig_enabled);

    /* NOT_SUPPORTED: each figure unset on its own, the rest of the device read */
    assert_true(t->has_util);
    assert_false(t->health.has_ecc);
    assert_false(t->health.has_retired);
    assert_false(t->health.has_remapped);
    assert_false(t->health.has_reasons);
    assert_false(t->health.has_events);
    assert_false(t->gpm.present); /* gpm=0: the device has none */
    unsigned long ecc_calls = fake_counter("libnvidia-ml.so.1", "ecc");

    double power = h->health.throttle_secs[RT_GPU_THROTTLE_POWER];
    assert_true(rt_gpu_collector_wait_polls(c, 3, DEADLINE_SECS));
    rt_sample_reset(&s);
    rt_gpu_collect(c, &s);
    n = rt_gpu_devices(c, refs, 4);
    h = device(refs, n, "GPU-h");
    assert_true(h->health.throttle_secs[RT_GPU_THROTTLE_POWER] >= power + 2 * o.poll_interval_secs * 0.5);
    /* the T4 is not asked again: only the H100's two ECC calls per poll */
    assert_int_equal((fake_counter("libnvidia-ml.so.1", "ecc") - ecc_calls) % 2, 0);
    rt_sample_free(&s);
    free_collector(c);
}

static void test_mig_instances(void **state)
{
    (void)state;
    char buf[2048];
    snprintf(buf, sizeof(buf),
             "device\n name=NVIDIA A100-SXM4-80GB\n uuid=GPU-a\n mem_total=85899345920\n mem_used=6442450944\n"
             " mig_capable=1\n mig=1\n gpm=1\n"
             "mig\n uuid=MIG-one\n gi=1\n ci=0\n mem_total=10737418240\n mem_used=4294967296\n gpm_sm=80\n"
             " gpm_occ=50\n gpm_tensor=60\n gpm_dram=70\n"
             "mig\n uuid=MIG-two\n gi=2\n ci=0\n mem_total=10737418240\n mem_used=2147483648\n gpm_sm=0\n"
             "process\n pid=%d\n vram=4294967296\n gi=1\n ci=0\n"
             "process\n pid=%d\n vram=2147483648\n gi=2\n ci=0\n",
             (int)p1, (int)p2);
    write_config(buf);
    struct rt_gpu_options o = fast_options();
    struct rt_gpu_collector *c = new_collector(&o);
    assert_true(rt_gpu_collector_wait_polls(c, 3, DEADLINE_SECS));
    struct rt_sample s;
    rt_sample_init(&s);
    rt_gpu_collect(c, &s);
    struct rt_gpu_devref refs[2];
    assert_int_equal(rt_gpu_devices(c, refs, 2), 1);
    const struct rt_gpu_dev *d = refs[0].d;
    assert_false(d->has_util); /* NVML gives no device use with MIG on */
    assert_true(d->mig_enabled);
    assert_int_equal(d->n_mig, 2);
    assert_string_equal(d->mig[0].uuid, "MIG-one");
    assert_int_equal(d->mig[0].gi, 1);
    assert_int_equal(d->mig[0].ci, 0);
    assert_true(d->mig[0].has_memory);
    assert_int_equal(d->mig[0].vram_total, 10 * GIB);
    assert_int_equal(d->mig[0].vram_used, 4 * GIB);
    assert_true(d->mig[0].gpm.present);
    assert_double_equal(d->mig[0].gpm.sm_active, 80, 1e-9);
    assert_double_equal(d->mig[0].gpm.dram_bw, 70, 1e-9);
    assert_string_equal(d->mig[1].uuid, "MIG-two");
    assert_true(d->mig[1].gpm.present);
    assert_double_equal(d->mig[1].gpm.sm_active, 0, 1e-12);
    assert_false(d->gpm.present); /* with MIG on, per instance only */
    /* the processes carry their instance */
    assert_int_equal(d->n_procs, 2);
    const struct rt_gpu_proc *a = d->procs[0].pid == p1 ? &d->procs[0] : &d->procs[1];
    const struct rt_gpu_proc *b = a == &d->procs[0] ? &d->procs[1] : &d->procs[0];
    assert_int_equal(a->gi, 1);
    assert_int_equal(b->gi, 2);
    assert_int_equal(b->vram_bytes, 2 * GIB);
    /* no process utilisation with MIG on: their use is unknown, not 0 */
    assert_false(a->has_sm);
    assert_false(d->has_proc_util);
    rt_sample_free(&s);
    free_collector(c);
}

/* The XIDs that come (into out, at most max): collected until the first,
 * then for a further half second, which shows there are no more. */
static size_t take_xids(struct rt_gpu_collector *c, struct rt_sample *s, struct rt_gpu_xid *out, size_t max)
{
    size_t got = 0;
    double end = mono_secs() + DEADLINE_SECS;
    while (mono_secs() < end) {
        rt_sample_reset(s);
        rt_gpu_collect(c, s);
        size_t n = rt_gpu_take_xids(c, out + got, max - got);
        if (n && !got)
            end = mono_secs() + 0.5;
        got += n;
        sleep_ms(10);
    }
    return got;
}

static void test_xid_events(void **state)
{
    (void)state;
    write_health();
    struct rt_gpu_options o = fast_options();
    struct rt_gpu_collector *c = new_collector(&o);
    struct rt_sample s;
    rt_sample_init(&s);
    struct rt_gpu_xid x[4];
    assert_true(rt_gpu_collector_wait_polls(c, 1, DEADLINE_SECS));
    /* an XID on the H100 (79: fallen off the bus); the T4 is not registered for events */
    char buf[2048];
    snprintf(buf, sizeof(buf),
             "device\n name=NVIDIA H100 80GB HBM3\n uuid=GPU-h\n util=97\n mem_total=85899345920\n"
             " mem_used=1073741824\n xids=79\n"
             "process\n pid=%d\n vram=1073741824\n sm=97\n"
             "device\n name=NVIDIA T4\n uuid=GPU-t\n util=10\n mem_total=16106127360\n mem_used=0\n"
             " ret.events=3\n xids=13\n",
             (int)p1);
    write_config(buf);
    double t0 = (double)rt_real_ns() / 1e9;
    assert_int_equal(take_xids(c, &s, x, 4), 1);
    assert_int_equal(x[0].index, 0);
    assert_string_equal(x[0].uuid, "GPU-h");
    assert_int_equal(x[0].xid, 79);
    assert_int_equal(x[0].gi, RT_GPU_NO_ID);
    assert_true(x[0].at >= t0 - 1 && x[0].at <= t0 + DEADLINE_SECS);
    struct rt_gpu_devref refs[2];
    assert_int_equal(rt_gpu_devices(c, refs, 2), 2);
    assert_int_equal(refs[0].d->health.xids, 1);
    assert_int_equal(refs[0].d->health.last_xid, 79);
    assert_int_equal(refs[1].d->health.xids, 0); /* not registered: its XID is not seen */
    assert_false(refs[1].d->health.has_events);
    /* each event once, however often the file is read: only the new one follows */
    snprintf(buf, sizeof(buf),
             "device\n name=NVIDIA H100 80GB HBM3\n uuid=GPU-h\n util=97\n mem_total=85899345920\n"
             " mem_used=1073741824\n xids=79,48\n"
             "device\n name=NVIDIA T4\n uuid=GPU-t\n util=10\n mem_total=16106127360\n mem_used=0\n ret.events=3\n");
    write_config(buf);
    assert_int_equal(take_xids(c, &s, x, 4), 1);
    assert_int_equal(x[0].xid, 48);
    assert_int_equal(rt_gpu_devices(c, refs, 2), 2);
    assert_int_equal(refs[0].d->health.xids, 2);
    assert_int_equal(refs[0].d->health.last_xid, 48);
    rt_sample_free(&s);
    free_collector(c);
}

/* An old driver: the old name of the reasons call, the first event wait, no GPM. */
static void test_old_driver(void **state)
{
    (void)state;
    const char *old = getenv("RT_FAKE_NVML_OLD");
    assert_non_null(old);
    write_health();
    struct rt_gpu_options o = fast_options();
    o.nvml_library = old;
    struct rt_gpu_collector *c = new_collector(&o);
    assert_true(rt_gpu_collector_wait_polls(c, 2, DEADLINE_SECS));
    struct rt_sample s;
    rt_sample_init(&s);
    rt_gpu_collect(c, &s);
    struct rt_gpu_devref refs[2];
    assert_int_equal(rt_gpu_devices(c, refs, 2), 2);
    const struct rt_gpu_dev *h = device(refs, 2, "GPU-h");
    assert_true(h->health.has_reasons);
    assert_int_equal(h->health.reasons, 0xC);
    assert_true(h->health.has_ecc);
    assert_false(h->gpm.present);
    assert_true(h->health.has_events);
    char buf[1024];
    snprintf(buf, sizeof(buf), "device\n name=NVIDIA H100 80GB HBM3\n uuid=GPU-h\n util=97\n xids=31\n"
                               "device\n name=NVIDIA T4\n uuid=GPU-t\n util=10\n ret.events=3\n");
    write_config(buf);
    struct rt_gpu_xid x;
    assert_int_equal(take_xids(c, &s, &x, 1), 1);
    assert_int_equal(x.xid, 31);
    assert_int_equal(x.gi, RT_GPU_NO_ID); /* the first record has no instance ids */
    rt_sample_free(&s);
    free_collector(c);
}

int main(void)
{
    rt_log_init(RT_LOG_STDERR, LOG_INFO);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_health_figures, test_teardown),
        cmocka_unit_test_teardown(test_mig_instances, test_teardown),
        cmocka_unit_test_teardown(test_xid_events, test_teardown),
        cmocka_unit_test_teardown(test_old_driver, test_teardown),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
