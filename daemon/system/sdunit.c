#include "system/sdunit.h"

#include "rt/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"

static uint64_t now_usec(void)
{
    return rt_mono_ns() / 1000;
}

/* A D-Bus address value: bytes outside [A-Za-z0-9_/.-] as %XX. */
static char *address(const char *socket)
{
    size_t n = strlen(socket);
    char *out = rt_xmalloc(strlen("unix:path=") + 3 * n + 1), *w = out + sprintf(out, "unix:path=");
    for (const unsigned char *p = (const unsigned char *)socket; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("_/.-", *p))
            *w++ = (char)*p;
        else
            w += sprintf(w, "%%%02x", *p);
    }
    *w = '\0';
    return out;
}

/* The manager's private socket, if we may use it and it answers. */
static int connect_private(enum rt_sd_manager m, sd_bus **out)
{
    char *path = NULL;
    const char *rt = getenv("XDG_RUNTIME_DIR");
    if (m == RT_SD_SYSTEM && geteuid() == 0)
        path = rt_xstrdup("/run/systemd/private");
    else if (m == RT_SD_USER && rt && rt[0] == '/')
        path = rt_xasprintf("%s/systemd/private", rt);
    if (!path || access(path, F_OK) != 0) {
        free(path);
        return -ENOENT;
    }
    char *addr = address(path);
    free(path);
    sd_bus *b = NULL;
    int r = sd_bus_new(&b);
    if (r >= 0)
        r = sd_bus_set_address(b, addr);
    if (r >= 0)
        r = sd_bus_start(b);
    free(addr);
    if (r < 0) {
        sd_bus_unref(b);
        return r;
    }
    *out = b;
    return 0;
}

static int connect_manager(enum rt_sd_manager m, sd_bus **out)
{
    *out = NULL;
    if (connect_private(m, out) == 0)
        return 0;
    return m == RT_SD_SYSTEM ? sd_bus_open_system(out) : sd_bus_open_user(out);
}

/* -errno for a bus error, systemd's own names included. */
static int bus_errno(const sd_bus_error *e, int r, char **why)
{
    if (why && !*why && sd_bus_error_is_set(e))
        *why = rt_xstrdup(e->message ? e->message : e->name);
    if (sd_bus_error_has_name(e, "org.freedesktop.systemd1.UnitExists"))
        return -EEXIST;
    if (sd_bus_error_has_name(e, "org.freedesktop.systemd1.NoSuchUnit") ||
        sd_bus_error_has_name(e, "org.freedesktop.systemd1.LoadFailed"))
        return -ENOENT;
    int en = sd_bus_error_get_errno(e);
    return en > 0 ? -en : r < 0 ? r : -EIO;
}

/* The interface holding ControlGroup for a unit of this type. */
static const char *cgroup_interface(const char *unit)
{
    static const struct {
        const char *suffix, *iface;
    } types[] = {
        {".service", "org.freedesktop.systemd1.Service"}, {".scope", "org.freedesktop.systemd1.Scope"},
        {".slice", "org.freedesktop.systemd1.Slice"},     {".socket", "org.freedesktop.systemd1.Socket"},
        {".mount", "org.freedesktop.systemd1.Mount"},     {".swap", "org.freedesktop.systemd1.Swap"},
    };
    size_t n = strlen(unit);
    for (size_t i = 0; i < RT_ARRAY_SIZE(types); i++) {
        size_t s = strlen(types[i].suffix);
        if (n > s && strcmp(unit + n - s, types[i].suffix) == 0)
            return types[i].iface;
    }
    return NULL;
}

static int read_cgroup(sd_bus *bus, const char *unit, uint64_t deadline, char **cgroup, char **why)
{
    const char *iface = cgroup_interface(unit);
    if (!iface)
        return -EINVAL;
    sd_bus_error err = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    uint64_t now = now_usec();
    if (now >= deadline)
        return -ETIMEDOUT;
    sd_bus_set_method_call_timeout(bus, deadline - now);
    int r = sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "GetUnit", &err, &reply, "s", unit);
    const char *path = NULL;
    if (r >= 0)
        r = sd_bus_message_read(reply, "o", &path);
    char *cg = NULL;
    if (r >= 0)
        r = sd_bus_get_property_string(bus, SD_DEST, path, iface, "ControlGroup", &err, &cg);
    if (r < 0) {
        r = bus_errno(&err, r, why);
    } else if (!cg || !cg[0]) {
        free(cg);
        r = -ENODATA;
    } else {
        *cgroup = cg;
    }
    sd_bus_message_unref(reply);
    sd_bus_error_free(&err);
    return r;
}

/* The scope's start job, until JobRemoved names it. */
struct job_wait {
    char *job;
    char *result;
};

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret)
{
    (void)ret;
    struct job_wait *w = userdata;
    uint32_t id;
    const char *path, *unit, *result;
    if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) >= 0 && w->job && !w->result &&
        strcmp(path, w->job) == 0)
        w->result = rt_xstrdup(result);
    return 0;
}

static int start_message(sd_bus *bus, sd_bus_message **msg, const char *unit, const char *slice,
                         const char *description, const pid_t *pids, size_t npids, unsigned flags)
{
    uint32_t *u = rt_xcalloc(npids, sizeof(*u));
    for (size_t i = 0; i < npids; i++)
        u[i] = (uint32_t)pids[i];
    int r = sd_bus_message_new_method_call(bus, msg, SD_DEST, SD_PATH, SD_MANAGER, "StartTransientUnit");
    if (r >= 0)
        r = sd_bus_message_append(*msg, "ss", unit, "fail");
    if (r >= 0)
        r = sd_bus_message_open_container(*msg, 'a', "(sv)");
    if (r >= 0)
        r = sd_bus_message_open_container(*msg, 'r', "sv");
    if (r >= 0)
        r = sd_bus_message_append(*msg, "s", "PIDs");
    if (r >= 0)
        r = sd_bus_message_open_container(*msg, 'v', "au");
    if (r >= 0)
        r = sd_bus_message_append_array(*msg, 'u', u, npids * sizeof(*u));
    if (r >= 0)
        r = sd_bus_message_close_container(*msg);
    if (r >= 0)
        r = sd_bus_message_close_container(*msg);
    if (r >= 0 && slice)
        r = sd_bus_message_append(*msg, "(sv)", "Slice", "s", slice);
    if (r >= 0 && description)
        r = sd_bus_message_append(*msg, "(sv)", "Description", "s", description);
    if (r >= 0)
        r = sd_bus_message_append(*msg, "(sv)", "CollectMode", "s", "inactive-or-failed");
    /* The figures: the memory, pids and io (v1 blkio) controllers for the
     * scope, which systemd does not give every unit; cpu only when asked
     * (its weight changes scheduling, and v2 cpu.stat needs no controller). */
    static const char *const accounting[] = {"MemoryAccounting", "TasksAccounting", "IOAccounting"};
    for (size_t i = 0; r >= 0 && i < RT_ARRAY_SIZE(accounting); i++)
        r = sd_bus_message_append(*msg, "(sv)", accounting[i], "b", 1);
    if (r >= 0 && (flags & RT_SD_CPU_ACCOUNTING))
        r = sd_bus_message_append(*msg, "(sv)", "CPUAccounting", "b", 1);
    if (r >= 0)
        r = sd_bus_message_close_container(*msg);
    if (r >= 0)
        r = sd_bus_message_append(*msg, "a(sa(sv))", 0); /* no auxiliary units */
    free(u);
    return r;
}

/* What both calls begin with: no answers yet, the arguments checked, the
 * deadline, the manager. */
static int begin(enum rt_sd_manager m, bool valid, uint64_t timeout_usec, char **cgroup, char **why,
                 uint64_t *deadline, sd_bus **bus)
{
    *cgroup = NULL;
    if (why)
        *why = NULL;
    if (!valid)
        return -EINVAL;
    *deadline = now_usec() + timeout_usec;
    return connect_manager(m, bus);
}

int rt_sd_start_scope(enum rt_sd_manager m, const char *unit, const char *slice, const char *description,
                      const pid_t *pids, size_t npids, unsigned flags, uint64_t timeout_usec, char **cgroup,
                      char **why)
{
    size_t n = unit ? strlen(unit) : 0;
    bool valid = n > 6 && strcmp(unit + n - 6, ".scope") == 0 && npids > 0;
    uint64_t deadline;
    sd_bus *bus;
    int r = begin(m, valid, timeout_usec, cgroup, why, &deadline, &bus);
    if (r < 0)
        return r;
    struct job_wait w = {0};
    sd_bus_slot *slot = NULL;
    sd_bus_message *msg = NULL, *reply = NULL;
    sd_bus_error err = SD_BUS_ERROR_NULL;
    /* Subscribed before the call: the job may end before its reply is read.
     * (A direct connection to the manager has no sender names.) */
    r = sd_bus_match_signal(bus, &slot, sd_bus_is_bus_client(bus) > 0 ? SD_DEST : NULL, SD_PATH, SD_MANAGER,
                            "JobRemoved", on_job_removed, &w);
    if (r >= 0)
        r = start_message(bus, &msg, unit, slice, description, pids, npids, flags);
    if (r >= 0) {
        uint64_t now = now_usec();
        r = now < deadline ? sd_bus_call(bus, msg, deadline - now, &err, &reply) : -ETIMEDOUT;
        if (r < 0 && sd_bus_error_is_set(&err))
            r = bus_errno(&err, r, why);
    }
    const char *job;
    if (r >= 0)
        r = sd_bus_message_read(reply, "o", &job);
    if (r >= 0) {
        w.job = rt_xstrdup(job);
        while (!w.result) {
            r = sd_bus_process(bus, NULL);
            if (r > 0)
                continue;
            uint64_t now = now_usec();
            if (r < 0 || now >= deadline) {
                r = r < 0 ? r : -ETIMEDOUT;
                break;
            }
            r = sd_bus_wait(bus, deadline - now);
            if (r < 0)
                break;
        }
    }
    if (r >= 0 && strcmp(w.result, "done") != 0) {
        if (why)
            *why = rt_xasprintf("the scope's start job ended: %s", w.result);
        r = -EIO;
    }
    if (r >= 0)
        r = read_cgroup(bus, unit, deadline, cgroup, why);
    free(w.job);
    free(w.result);
    sd_bus_error_free(&err);
    sd_bus_message_unref(reply);
    sd_bus_message_unref(msg);
    sd_bus_slot_unref(slot);
    sd_bus_flush_close_unref(bus);
    return r < 0 ? r : 0;
}

int rt_sd_unit_cgroup(enum rt_sd_manager m, const char *unit, uint64_t timeout_usec, char **cgroup, char **why)
{
    uint64_t deadline;
    sd_bus *bus;
    int r = begin(m, unit && cgroup_interface(unit), timeout_usec, cgroup, why, &deadline, &bus);
    if (r < 0)
        return r;
    r = read_cgroup(bus, unit, deadline, cgroup, why);
    sd_bus_flush_close_unref(bus);
    return r;
}
