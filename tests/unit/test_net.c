/* Network collector against tests/fixtures/host: attributes, lo excluded,
 * missing and negative speeds, interfaces appearing, vanishing and being
 * replaced, counters going backwards, garbage input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"
#include "collect/net.h"

#define EPS 1e-9

static const char HEADER[] =
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n";

struct env {
    char *dir;
    struct rt_roots roots;
    struct rt_sample s;
    struct rt_net_collector *c;
};

static struct env *env_new(void)
{
    struct env *e = rt_xcalloc(1, sizeof(*e));
    e->dir = fx_copy("host");
    fx_roots(&e->roots, e->dir);
    rt_sample_init(&e->s);
    fx_now_ns = 1000000000ULL;
    e->c = rt_net_collector_new_hooks(&e->roots, &fx_hooks);
    return e;
}

static void env_free(struct env *e)
{
    rt_net_collector_free(e->c);
    rt_sample_free(&e->s);
    rt_roots_close(&e->roots);
    fx_rmtree(e->dir);
    free(e);
}

static void collect(struct env *e, uint64_t advance_ns)
{
    fx_now_ns += advance_ns;
    rt_sample_reset(&e->s);
    rt_net_collect(e->c, &e->s);
}

static void write_netdev(struct env *e, const char *body)
{
    char *text = rt_xasprintf("%s%s", HEADER, body);
    fx_write(e->dir, "proc/net/dev", text);
    free(text);
}

static const struct rt_netif *nif(const struct rt_sample *s, const char *name)
{
    for (size_t i = 0; i < s->n_nets; i++)
        if (strcmp(s->nets[i].interface, name) == 0)
            return &s->nets[i];
    fail_msg("no interface %s", name);
    return NULL;
}

static void test_fixture(void **state)
{
    (void)state;
    struct env *e = env_new();
    collect(e, 2000000000ULL);
    const struct rt_sample *s = &e->s;
    assert_int_equal(s->n_nets, 3); /* no lo */
    assert_string_equal(s->nets[0].interface, "docker0");
    assert_string_equal(s->nets[1].interface, "eth0");
    assert_string_equal(s->nets[2].interface, "eth1");

    const struct rt_netif *n = nif(s, "eth0");
    assert_string_equal(n->mac_address, "00:1b:21:aa:bb:01");
    assert_string_equal(n->driver, "e1000e");
    assert_string_equal(n->operstate, "up");
    assert_true(n->has_speed);
    assert_int_equal(n->speed_mbps, 1000);
    assert_true(n->has_mtu);
    assert_int_equal(n->mtu, 1500);
    assert_int_equal(n->rx_bytes_total, 1000000);
    assert_int_equal(n->tx_bytes_total, 500000);
    assert_float_equal(n->rx_bytes_per_sec, 0, 0);

    n = nif(s, "eth1"); /* virtio reports speed -1: unknown */
    assert_string_equal(n->driver, "virtio_net");
    assert_false(n->has_speed);
    assert_int_equal(n->mtu, 9000);

    n = nif(s, "docker0"); /* a bridge: no device, no speed file */
    assert_null(n->driver);
    assert_false(n->has_speed);
    assert_string_equal(n->operstate, "down");
    assert_string_equal(n->mac_address, "02:42:ac:11:00:01");
    env_free(e);
}

static void test_rates_appear_vanish(void **state)
{
    (void)state;
    struct env *e = env_new();
    fx_write(e->dir, "sys/class/net/veth9/address", "aa:aa:aa:aa:aa:09\n");
    fx_write(e->dir, "sys/class/net/veth9/operstate", "up\n");
    fx_write(e->dir, "sys/class/net/veth9/mtu", "1500\n");
    fx_write(e->dir, "sys/class/net/veth9/speed", "10000\n");
    write_netdev(e, "    lo:  999999     100    0    0    0     0          0         0   999999     100    0    0    0     0       0          0\n"
                    "  eth0: 1004000    1000    0    0    0     0          0         0   501000     800    0    0    0     0       0          0\n"
                    "  eth1:    1000    2000    0    0    0     0          0         0   300000     300    0    0    0     0       0          0\n"
                    " veth9:     777       1    0    0    0     0          0         0      888       1    0    0    0     0       0          0\n");
    collect(e, 2000000000ULL);
    const struct rt_sample *s = &e->s;
    assert_int_equal(s->n_nets, 3);
    assert_string_equal(s->nets[0].interface, "eth0");
    assert_string_equal(s->nets[1].interface, "eth1");
    assert_string_equal(s->nets[2].interface, "veth9");
    assert_float_equal(nif(s, "eth0")->rx_bytes_per_sec, 2000.0, EPS);
    assert_float_equal(nif(s, "eth0")->tx_bytes_per_sec, 500.0, EPS);
    assert_float_equal(nif(s, "eth1")->rx_bytes_per_sec, 0, 0); /* counter went backwards */
    assert_float_equal(nif(s, "eth1")->tx_bytes_per_sec, 0, 0);
    const struct rt_netif *v = nif(s, "veth9");
    assert_float_equal(v->rx_bytes_per_sec, 0, 0); /* first sample */
    assert_int_equal(v->rx_bytes_total, 777);
    assert_int_equal(v->speed_mbps, 10000);
    assert_null(v->driver);
    e->s.has_interval = true;
    e->s.actual_interval_ms = 2000;
    assert_int_equal(rt_sample_net_recv_bytes(&e->s), 4000);
    assert_int_equal(rt_sample_net_sent_bytes(&e->s), 1000);

    /* docker0 is back with old counters: new again, rate 0. */
    write_netdev(e, "docker0: 5000 0 0 0 0 0 0 0 6000 0 0 0 0 0 0 0\n"
                    "  eth0: 1005000    1000    0    0    0     0          0         0   501000     800    0    0    0     0       0          0\n");
    collect(e, 1000000000ULL);
    assert_int_equal(e->s.n_nets, 2);
    assert_float_equal(nif(&e->s, "docker0")->rx_bytes_per_sec, 0, 0);
    assert_string_equal(nif(&e->s, "docker0")->mac_address, "02:42:ac:11:00:01");
    assert_float_equal(nif(&e->s, "eth0")->rx_bytes_per_sec, 1000.0, EPS);
    env_free(e);
}

/* Deleted and recreated under the same name between two samples (a veth
 * pair re-made by a container runtime): the new sysfs entry is picked up. */
static void test_replaced_namesake(void **state)
{
    (void)state;
    struct env *e = env_new();
    collect(e, 1000000000ULL);
    fx_remove(e->dir, "sys/class/net/eth0");
    fx_write(e->dir, "sys/class/net/eth0/address", "00:1b:21:aa:bb:02\n");
    fx_write(e->dir, "sys/class/net/eth0/operstate", "down\n");
    fx_write(e->dir, "sys/class/net/eth0/mtu", "1400\n");
    collect(e, 1000000000ULL);
    const struct rt_netif *n = nif(&e->s, "eth0");
    assert_string_equal(n->mac_address, "00:1b:21:aa:bb:02");
    assert_string_equal(n->operstate, "down");
    assert_null(n->driver);
    assert_false(n->has_speed);
    assert_int_equal(n->mtu, 1400);
    env_free(e);
}

static void test_garbage(void **state)
{
    (void)state;
    struct env *e = env_new();
    fx_write(e->dir, "sys/class/net/eth0/mtu", "abc\n");
    fx_write(e->dir, "sys/class/net/eth0/speed", "fast\n");
    fx_remove(e->dir, "sys/class/net/eth1/operstate");
    fx_capture_start();
    for (int i = 0; i < 2; i++) {
        write_netdev(e, "  eth0: 1001000 1 2 3 4 5 6 7 500000 1 2 3 4 5 6 7\n"
                        "  eth1: abc def\n"
                        ": 1 2 3 4 5 6 7 8 9\n"
                        "docker0: 12 3");
        collect(e, 1000000000ULL);
        assert_int_equal(e->s.n_nets, 1);
        const struct rt_netif *n = nif(&e->s, "eth0");
        assert_false(n->has_mtu);
        assert_false(n->has_speed);
        assert_float_equal(n->rx_bytes_per_sec, i == 0 ? 1000.0 : 0, EPS);
    }
    /* An interface whose sysfs entry is unreadable keeps its counters. */
    write_netdev(e, "  eth1: 2000000 0 0 0 0 0 0 0 300000 0 0 0 0 0 0 0\n");
    collect(e, 1000000000ULL);
    assert_null(nif(&e->s, "eth1")->operstate);
    assert_int_equal(nif(&e->s, "eth1")->rx_bytes_total, 2000000);
    /* Only the header, then no file at all. */
    write_netdev(e, "");
    collect(e, 1000000000ULL);
    assert_int_equal(e->s.n_nets, 0);
    fx_remove(e->dir, "proc/net/dev");
    for (int i = 0; i < 2; i++) {
        collect(e, 1000000000ULL);
        assert_int_equal(e->s.n_nets, 0);
    }
    char *log = fx_capture_end();
    assert_int_equal(fx_count(log, "unparsable line in /proc/net/dev"), 1);
    assert_int_equal(fx_count(log, "cannot read /proc/net/dev"), 1);
    free(log);
    env_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture),
        cmocka_unit_test(test_rates_appear_vanish),
        cmocka_unit_test(test_replaced_namesake),
        cmocka_unit_test(test_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
