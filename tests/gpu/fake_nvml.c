/* A fake libnvidia-ml.so.1 for tests: the NVML entry points the tracker uses,
 * under the versioned names the real driver exports and the plain ones too
 * (built with -DFAKE_NVML_OLD: plain names only, like an old driver). The _v3
 * process lists write 32-byte entries, as drivers 535.43-535.86 did. Devices
 * and processes come from the file named by $FAKE_NVML_CONFIG, read at init
 * and again whenever it changes (a test rewrites it to move processes, change
 * use or inject XIDs into a running daemon; counters and injected XIDs
 * already delivered carry over):
 *
 *   init=<ret>  init_hang_ms=<ms>  driver=<version>
 *   device                         starts a device; then per device:
 *     name= uuid= pci=<full bus id> util=<pct>[,<pct>...] (cycled per call)
 *     mem_total= mem_used= temp= power_mw= clock= energy_mj= energy_step_mj=
 *     ret.<fn>=<code>              fixed return code, fn one of util memory temp
 *                                  power clock energy compute graphics proc_util
 *                                  mig ecc pages remap reasons events gpm
 *     slow.<fn>=<us>               each call of fn spins this much CPU time
 *     lost_after=<n>               GPU_IS_LOST from the (n+1)th memory query on
 *     mig_capable=1 mig=<mode>     MIG supported, and its current mode
 *     ecc_corrected= ecc_uncorrected=          volatile ECC error totals
 *     retired_sbe= retired_dbe=                retired pages by cause
 *     remapped_corr= remapped_unc= remap_pending= remap_failure=
 *     reasons=<bits>               current clocks event (throttle) reasons
 *     gpm=1 gpm_sm= gpm_occ= gpm_tensor= gpm_dram=   GPM support and figures (%)
 *     xids=<xid>[,<xid>...]        every XID event so far: new ones are sent
 *   mig                            a MIG instance of the last device:
 *     uuid= gi= ci= mem_total= mem_used= gpm_sm= gpm_occ= gpm_tensor= gpm_dram=
 *   process                        starts a process on the last device:
 *     pid= vram= sm= list=compute|graphics|both gi= ci=
 *
 * Tests steer it at run time through fake_nvml_set_lost/_set_hang and read
 * call counters with fake_nvml_counter (found with dlsym). */
#include "fake_nvml.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
struct device devs[MAX_DEV];
struct device migs[MAX_DEV][MAX_MIG];
struct runtime rts[MAX_DEV];
unsigned n_devs;
int initialized; /* nvmlInit/nvmlShutdown nest, as in the real library */
static char driver[80];
static struct stat loaded; /* the configuration file as last read */

static const char *const fn_names[FN_N] = {"util", "memory", "temp", "power", "clock", "energy",
                                           "compute", "graphics", "proc_util", "mig", "ecc", "pages",
                                           "remap", "reasons", "events", "gpm"};
static const char *const ctr_names[C_N] = {"init", "shutdown", "compute_v3", "compute_v2", "compute_v1",
                                           "graphics_v3", "graphics_v2", "graphics_v1", "insufficient_size",
                                           "proc_util", "pci_v3", "pci_v1", "event_wait", "gpm_metrics",
                                           "mig_handle", "ecc", "energy", "mig_mode"};
unsigned long ctrs[C_N];

unsigned long fake_nvml_counter(const char *name)
{
    pthread_mutex_lock(&mu);
    unsigned long v = 0;
    for (int i = 0; i < C_N; i++)
        if (strcmp(name, ctr_names[i]) == 0)
            v = ctrs[i];
    pthread_mutex_unlock(&mu);
    return v;
}

void fake_nvml_set_lost(unsigned index, int lost)
{
    pthread_mutex_lock(&mu);
    if (index < n_devs)
        rts[index].lost = lost;
    pthread_mutex_unlock(&mu);
}

void fake_nvml_set_hang(unsigned index, unsigned ms)
{
    pthread_mutex_lock(&mu);
    if (index < n_devs)
        rts[index].hang_ms = ms;
    pthread_mutex_unlock(&mu);
}

static void set_list(unsigned *out, unsigned *n, unsigned max, const char *v)
{
    *n = 0;
    for (const char *p = v; *p && *n < max; p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
        out[(*n)++] = (unsigned)strtoul(p, NULL, 10);
}

/* Keys a device and a MIG instance share; false when k is none of them. */
static int set_common_key(struct device *d, const char *k, const char *v)
{
    if (!strcmp(k, "uuid"))
        snprintf(d->uuid, sizeof(d->uuid), "%s", v);
    else if (!strcmp(k, "mem_total"))
        d->mem_total = strtoull(v, NULL, 10);
    else if (!strcmp(k, "mem_used"))
        d->mem_used = strtoull(v, NULL, 10);
    else if (!strcmp(k, "gpm_sm"))
        d->gpm_sm = strtod(v, NULL);
    else if (!strcmp(k, "gpm_occ"))
        d->gpm_occupancy = strtod(v, NULL);
    else if (!strcmp(k, "gpm_tensor"))
        d->gpm_tensor = strtod(v, NULL);
    else if (!strcmp(k, "gpm_dram"))
        d->gpm_dram = strtod(v, NULL);
    else if (!strcmp(k, "gi"))
        d->gi = (unsigned)strtoul(v, NULL, 10);
    else if (!strcmp(k, "ci"))
        d->ci = (unsigned)strtoul(v, NULL, 10);
    else
        return 0;
    return 1;
}

static void set_device_key(struct device *d, const char *k, const char *v)
{
    unsigned long long n = strtoull(v, NULL, 0);
    if (set_common_key(d, k, v))
        return;
    if (!strcmp(k, "name"))
        snprintf(d->name, sizeof(d->name), "%s", v);
    else if (!strcmp(k, "pci"))
        snprintf(d->pci, sizeof(d->pci), "%s", v);
    else if (!strcmp(k, "util"))
        set_list(d->util, &d->n_util, MAX_UTIL, v);
    else if (!strcmp(k, "xids"))
        set_list(d->xids, &d->n_xids, MAX_XID, v);
    else if (!strcmp(k, "temp"))
        d->temp = (unsigned)n;
    else if (!strcmp(k, "power_mw"))
        d->power_mw = (unsigned)n;
    else if (!strcmp(k, "clock"))
        d->clock = (unsigned)n;
    else if (!strcmp(k, "energy_mj"))
        d->energy_mj = n;
    else if (!strcmp(k, "energy_step_mj"))
        d->energy_step_mj = n;
    else if (!strcmp(k, "lost_after"))
        d->lost_after = (unsigned)n;
    else if (!strcmp(k, "mig_capable"))
        d->mig_capable = (int)n;
    else if (!strcmp(k, "mig"))
        d->mig_mode = (int)n;
    else if (!strcmp(k, "ecc_corrected"))
        d->ecc_corrected = n;
    else if (!strcmp(k, "ecc_uncorrected"))
        d->ecc_uncorrected = n;
    else if (!strcmp(k, "retired_sbe"))
        d->retired_sbe = (unsigned)n;
    else if (!strcmp(k, "retired_dbe"))
        d->retired_dbe = (unsigned)n;
    else if (!strcmp(k, "remapped_corr"))
        d->remapped_corr = (unsigned)n;
    else if (!strcmp(k, "remapped_unc"))
        d->remapped_unc = (unsigned)n;
    else if (!strcmp(k, "remap_pending"))
        d->remap_pending = (unsigned)n;
    else if (!strcmp(k, "remap_failure"))
        d->remap_failure = (unsigned)n;
    else if (!strcmp(k, "reasons"))
        d->reasons = n;
    else if (!strcmp(k, "gpm"))
        d->gpm = (int)n;
    else if (!strncmp(k, "ret.", 4) || !strncmp(k, "slow.", 5)) {
        bool slow = k[0] == 's';
        for (int i = 0; i < FN_N; i++)
            if (!strcmp(k + (slow ? 5 : 4), fn_names[i])) {
                if (slow)
                    d->slow_us[i] = (unsigned)n;
                else
                    d->ret[i] = atoi(v);
            }
    }
}

static void set_proc_key(struct proc *p, const char *k, const char *v)
{
    if (!strcmp(k, "pid"))
        p->pid = (unsigned)strtoul(v, NULL, 10);
    else if (!strcmp(k, "vram"))
        p->vram = strtoull(v, NULL, 10);
    else if (!strcmp(k, "sm"))
        p->sm = (unsigned)strtoul(v, NULL, 10);
    else if (!strcmp(k, "list"))
        p->lists = !strcmp(v, "compute") ? 1 : !strcmp(v, "graphics") ? 2 : 3;
    else if (!strcmp(k, "gi"))
        p->gi = (unsigned)strtoul(v, NULL, 10);
    else if (!strcmp(k, "ci"))
        p->ci = (unsigned)strtoul(v, NULL, 10);
}

/* Parse the file into devs/migs (under mu). Returns the init result it
 * configures; *hang_ms its init hang. */
static int parse_config(FILE *f, unsigned *hang_ms)
{
    memset(devs, 0, sizeof(devs));
    memset(migs, 0, sizeof(migs));
    n_devs = 0;
    snprintf(driver, sizeof(driver), "999.99");
    char line[512];
    int ret = OK;
    struct proc *p = NULL;
    struct device *m = NULL;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *s = line + strspn(line, " \t");
        if (!*s || *s == '#')
            continue;
        struct device *d = n_devs ? &devs[n_devs - 1] : NULL;
        if (!strcmp(s, "device")) {
            if (n_devs < MAX_DEV)
                n_devs++;
            p = NULL;
            m = NULL;
            continue;
        }
        if (!strcmp(s, "process")) {
            p = d && d->n_procs < MAX_PROC ? &d->procs[d->n_procs++] : NULL;
            if (p)
                *p = (struct proc){.lists = 1, .gi = NO_ID, .ci = NO_ID};
            m = NULL;
            continue;
        }
        if (!strcmp(s, "mig")) {
            m = d && d->n_mig < MAX_MIG ? &migs[n_devs - 1][d->n_mig++] : NULL;
            if (m)
                *m = (struct device){.is_mig = 1, .parent = n_devs - 1};
            p = NULL;
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq)
            continue;
        *eq = '\0';
        const char *k = s, *v = eq + 1;
        if (p)
            set_proc_key(p, k, v);
        else if (m)
            set_common_key(m, k, v);
        else if (d)
            set_device_key(d, k, v);
        else if (!strcmp(k, "init"))
            ret = atoi(v);
        else if (!strcmp(k, "init_hang_ms"))
            *hang_ms = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(k, "driver"))
            snprintf(driver, sizeof(driver), "%s", v);
    }
    return ret;
}

/* Returns the init result configured. */
static int load_config(unsigned *hang_ms)
{
    memset(rts, 0, sizeof(rts));
    const char *path = getenv("FAKE_NVML_CONFIG");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f) {
        memset(devs, 0, sizeof(devs));
        n_devs = 0;
        return 9; /* NVML_ERROR_DRIVER_NOT_LOADED, like a GPU-less host */
    }
    fstat(fileno(f), &loaded);
    int ret = parse_config(f, hang_ms);
    fclose(f);
    return ret;
}

void fake_maybe_reload(void)
{
    const char *path = getenv("FAKE_NVML_CONFIG");
    struct stat st;
    if (!initialized || !path || stat(path, &st) != 0)
        return;
    if (st.st_ino == loaded.st_ino && st.st_size == loaded.st_size && st.st_mtim.tv_sec == loaded.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == loaded.st_mtim.tv_nsec)
        return;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    unsigned devices = n_devs, hang = 0;
    fstat(fileno(f), &loaded);
    parse_config(f, &hang);
    fclose(f);
    n_devs = devices; /* handles were handed out: the devices stay */
    pthread_cond_broadcast(&changed);
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static int do_init(void)
{
    unsigned hang = 0;
    int r = OK;
    pthread_mutex_lock(&mu);
    if (!initialized) {
        memset(ctrs, 0, sizeof(ctrs));
        r = load_config(&hang);
    }
    ctrs[C_INIT]++;
    if (r == OK)
        initialized++;
    pthread_mutex_unlock(&mu);
    if (hang)
        sleep_ms(hang);
    return r;
}

int nvmlInit_v2(void) { return do_init(); }
int nvmlInit(void) { return do_init(); }
int nvmlInitWithFlags(unsigned flags) { (void)flags; return do_init(); }

int nvmlShutdown(void)
{
    pthread_mutex_lock(&mu);
    ctrs[C_SHUTDOWN]++;
    if (initialized)
        initialized--;
    pthread_mutex_unlock(&mu);
    return OK;
}

const char *nvmlErrorString(int r)
{
    switch (r) {
    case OK: return "Success";
    case NOT_SUPPORTED: return "Not Supported";
    case 9: return "Driver Not Loaded";
    case TIMEOUT: return "Timeout";
    case GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}

int nvmlSystemGetDriverVersion(char *buf, unsigned len)
{
    snprintf(buf, len, "%s", driver);
    return OK;
}

static int get_count(unsigned *n)
{
    if (!initialized)
        return UNINITIALIZED;
    *n = n_devs;
    return OK;
}
int nvmlDeviceGetCount(unsigned *n) { return get_count(n); }
#ifndef FAKE_NVML_OLD
int nvmlDeviceGetCount_v2(unsigned *n) { return get_count(n); }
#endif

static int get_handle(unsigned i, struct device **h)
{
    if (!initialized)
        return UNINITIALIZED;
    if (i >= n_devs)
        return INVALID_ARGUMENT;
    *h = &devs[i];
    return OK;
}
int nvmlDeviceGetHandleByIndex(unsigned i, struct device **h) { return get_handle(i, h); }
#ifndef FAKE_NVML_OLD
int nvmlDeviceGetHandleByIndex_v2(unsigned i, struct device **h) { return get_handle(i, h); }
#endif

unsigned fake_index(const struct device *d)
{
    return d->is_mig ? d->parent : (unsigned)(d - devs);
}

static uint64_t thread_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}

int fake_enter(struct device *d, enum fn f)
{
    const struct device *p = d->is_mig ? &devs[d->parent] : d;
    const struct runtime *rt = &rts[fake_index(d)];
    if ((int)f < FN_N && p->slow_us[f])
        for (uint64_t t0 = thread_cpu_us(); thread_cpu_us() - t0 < p->slow_us[f];) {
        }
    if (rt->lost || (p->lost_after && rt->memory_calls > p->lost_after))
        return GPU_IS_LOST;
    return (int)f < FN_N ? p->ret[f] : OK;
}

int nvmlDeviceGetName(struct device *d, char *buf, unsigned len)
{
    pthread_mutex_lock(&mu);
    int r = fake_enter(d, FN_N);
    if (r == OK)
        snprintf(buf, len, "%s", d->is_mig ? devs[d->parent].name : d->name);
    pthread_mutex_unlock(&mu);
    return r;
}

int nvmlDeviceGetUUID(struct device *d, char *buf, unsigned len)
{
    pthread_mutex_lock(&mu);
    int r = fake_enter(d, FN_N);
    if (r == OK)
        snprintf(buf, len, "%s", d->uuid);
    pthread_mutex_unlock(&mu);
    return r;
}

struct pci_v3 {
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
};
struct pci_v1 {
    char bus_id[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id, reserved[4];
};

/* "00000000:17:00.0" -> legacy "0000:17:00.0" */
static const char *legacy_bus(const char *full)
{
    size_t n = strlen(full);
    return n > 12 ? full + n - 12 : full;
}

#ifndef FAKE_NVML_OLD
static int pci_v3(struct device *d, struct pci_v3 *p)
{
    pthread_mutex_lock(&mu);
    ctrs[C_PCI_V3]++;
    int r = fake_enter(d, FN_N);
    if (r == OK) {
        memset(p, 0, sizeof(*p));
        snprintf(p->bus_id_legacy, sizeof(p->bus_id_legacy), "%.15s", legacy_bus(d->pci));
        snprintf(p->bus_id, sizeof(p->bus_id), "%s", d->pci);
    }
    pthread_mutex_unlock(&mu);
    return r;
}
int nvmlDeviceGetPciInfo_v3(struct device *d, struct pci_v3 *p) { return pci_v3(d, p); }
int nvmlDeviceGetPciInfo_v2(struct device *d, struct pci_v3 *p) { return pci_v3(d, p); }
#endif

int nvmlDeviceGetPciInfo(struct device *d, struct pci_v1 *p)
{
    pthread_mutex_lock(&mu);
    ctrs[C_PCI_V1]++;
    int r = fake_enter(d, FN_N);
    if (r == OK) {
        memset(p, 0, sizeof(*p));
        snprintf(p->bus_id, sizeof(p->bus_id), "%.15s", legacy_bus(d->pci));
    }
    pthread_mutex_unlock(&mu);
    return r;
}

int nvmlDeviceGetUtilizationRates(struct device *d, unsigned *u /* {gpu, memory} */)
{
    pthread_mutex_lock(&mu);
    int r = fake_enter(d, FN_UTIL);
    if (r == OK && (d->is_mig || d->mig_mode))
        r = NOT_SUPPORTED; /* as NVML: no utilisation with MIG on */
    if (r == OK) {
        u[0] = d->n_util ? d->util[rts[fake_index(d)].util_pos++ % d->n_util] : 0;
        u[1] = 0;
    }
    pthread_mutex_unlock(&mu);
    return r;
}

int nvmlDeviceGetMemoryInfo(struct device *d, unsigned long long *m /* {total, free, used} */)
{
    pthread_mutex_lock(&mu);
    fake_maybe_reload();
    struct runtime *rt = &rts[fake_index(d)];
    unsigned hang = d->is_mig ? 0 : rt->hang_ms;
    if (!d->is_mig)
        rt->hang_ms = 0;
    pthread_mutex_unlock(&mu);
    if (hang)
        sleep_ms(hang); /* a stuck driver call, outside the lock */
    pthread_mutex_lock(&mu);
    if (!d->is_mig)
        rt->memory_calls++;
    int r = fake_enter(d, FN_MEMORY);
    if (r == OK) {
        m[0] = d->mem_total;
        m[1] = d->mem_total - d->mem_used;
        m[2] = d->mem_used;
    }
    pthread_mutex_unlock(&mu);
    return r;
}

#define SIMPLE_GETTER(fname, fn, expr)                                                                             \
    int fname(struct device *d, unsigned *out)                                                                      \
    {                                                                                                              \
        pthread_mutex_lock(&mu);                                                                                   \
        int r = fake_enter(d, fn);                                                                                      \
        if (r == OK)                                                                                               \
            *out = (expr);                                                                                         \
        pthread_mutex_unlock(&mu);                                                                                 \
        return r;                                                                                                  \
    }

SIMPLE_GETTER(nvmlDeviceGetPowerUsage, FN_POWER, d->power_mw)

int nvmlDeviceGetTemperature(struct device *d, int sensor, unsigned *out)
{
    pthread_mutex_lock(&mu);
    int r = sensor != 0 ? INVALID_ARGUMENT : fake_enter(d, FN_TEMP);
    if (r == OK)
        *out = d->temp;
    pthread_mutex_unlock(&mu);
    return r;
}

int nvmlDeviceGetClockInfo(struct device *d, int type, unsigned *out)
{
    pthread_mutex_lock(&mu);
    int r = type != 0 ? INVALID_ARGUMENT : fake_enter(d, FN_CLOCK); /* NVML_CLOCK_GRAPHICS */
    if (r == OK)
        *out = d->clock;
    pthread_mutex_unlock(&mu);
    return r;
}

int nvmlDeviceGetTotalEnergyConsumption(struct device *d, unsigned long long *mj)
{
    pthread_mutex_lock(&mu);
    ctrs[C_ENERGY]++;
    int r = fake_enter(d, FN_ENERGY);
    if (r == OK) {
        rts[fake_index(d)].energy_added += d->energy_step_mj;
        *mj = d->energy_mj + rts[fake_index(d)].energy_added;
    }
    pthread_mutex_unlock(&mu);
    return r;
}

struct proc_v1 { unsigned pid; unsigned long long used; };
struct proc_v2 { unsigned pid; unsigned long long used; unsigned gi, ci; };
/* What _v3 of drivers 535.43-535.86 writes: v2 plus usedGpuCcProtectedMemory. */
struct proc_v3_535 { unsigned pid; unsigned long long used; unsigned gi, ci; unsigned long long cc_protected; };

/* The usual NVML contract: too small a buffer gives INSUFFICIENT_SIZE and the
 * count needed. */
static int list_procs(struct device *d, int list, enum fn f, int version, unsigned *count, void *out)
{
    pthread_mutex_lock(&mu);
    enum ctr c = list == 1 ? (version == 3 ? C_COMPUTE_V3 : version == 2 ? C_COMPUTE_V2 : C_COMPUTE_V1)
                           : (version == 3 ? C_GRAPHICS_V3 : version == 2 ? C_GRAPHICS_V2 : C_GRAPHICS_V1);
    ctrs[c]++;
    int r = fake_enter(d, f);
    if (r == OK) {
        unsigned n = 0;
        for (unsigned i = 0; i < d->n_procs; i++)
            n += (d->procs[i].lists & list) != 0;
        if (*count < n || (n && !out)) {
            *count = n;
            ctrs[C_INSUFFICIENT]++;
            r = INSUFFICIENT_SIZE;
        } else {
            unsigned k = 0;
            for (unsigned i = 0; i < d->n_procs; i++) {
                const struct proc *p = &d->procs[i];
                if (!(p->lists & list))
                    continue;
                if (version == 1)
                    ((struct proc_v1 *)out)[k++] = (struct proc_v1){p->pid, p->vram};
                else if (version == 2)
                    ((struct proc_v2 *)out)[k++] = (struct proc_v2){p->pid, p->vram, p->gi, p->ci};
                else
                    ((struct proc_v3_535 *)out)[k++] =
                        (struct proc_v3_535){p->pid, p->vram, p->gi, p->ci, 0};
            }
            *count = n;
        }
    }
    pthread_mutex_unlock(&mu);
    return r;
}

int nvmlDeviceGetComputeRunningProcesses(struct device *d, unsigned *n, void *o) { return list_procs(d, 1, FN_COMPUTE, 1, n, o); }
int nvmlDeviceGetGraphicsRunningProcesses(struct device *d, unsigned *n, void *o) { return list_procs(d, 2, FN_GRAPHICS, 1, n, o); }
#ifndef FAKE_NVML_OLD
int nvmlDeviceGetComputeRunningProcesses_v2(struct device *d, unsigned *n, void *o) { return list_procs(d, 1, FN_COMPUTE, 2, n, o); }
int nvmlDeviceGetGraphicsRunningProcesses_v2(struct device *d, unsigned *n, void *o) { return list_procs(d, 2, FN_GRAPHICS, 2, n, o); }
int nvmlDeviceGetComputeRunningProcesses_v3(struct device *d, unsigned *n, void *o) { return list_procs(d, 1, FN_COMPUTE, 3, n, o); }
int nvmlDeviceGetGraphicsRunningProcesses_v3(struct device *d, unsigned *n, void *o) { return list_procs(d, 2, FN_GRAPHICS, 3, n, o); }
#endif

struct util_sample { unsigned pid; unsigned long long ts; unsigned sm, mem, enc, dec; };

/* One sample per process with SM activity, stamped now (CPU time, us). */
int nvmlDeviceGetProcessUtilization(struct device *d, struct util_sample *out, unsigned *count,
                                    unsigned long long last_seen)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    unsigned long long ts = (unsigned long long)now.tv_sec * 1000000ULL + (unsigned long long)now.tv_nsec / 1000;
    pthread_mutex_lock(&mu);
    ctrs[C_PROC_UTIL]++;
    int r = fake_enter(d, FN_PROC_UTIL);
    if (r == OK && d->mig_mode)
        r = NOT_SUPPORTED; /* as NVML: no process utilisation with MIG on */
    if (r == OK) {
        unsigned n = 0;
        for (unsigned i = 0; i < d->n_procs; i++)
            n += d->procs[i].sm > 0 && ts > last_seen;
        if (!n) {
            r = NOT_FOUND;
        } else if (!out || *count < n) {
            *count = n;
            ctrs[C_INSUFFICIENT]++;
            r = INSUFFICIENT_SIZE;
        } else {
            unsigned k = 0;
            for (unsigned i = 0; i < d->n_procs; i++)
                if (d->procs[i].sm > 0)
                    out[k++] = (struct util_sample){d->procs[i].pid, ts, d->procs[i].sm, 0, 0, 0};
            *count = n;
        }
    }
    pthread_mutex_unlock(&mu);
    return r;
}
