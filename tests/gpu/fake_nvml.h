/* The fake libnvidia-ml.so.1's state, shared by fake_nvml.c (the
 * configuration, devices, processes, the calls the tracker has always made)
 * and fake_nvml_ext.c (MIG, events, ECC, retired and remapped pages, clock
 * event reasons, GPM). Every entry point takes `mu`. */
#ifndef FAKE_NVML_H
#define FAKE_NVML_H

#include <pthread.h>

#define MAX_DEV 8
#define MAX_MIG 7
#define MAX_PROC 64
#define MAX_UTIL 16
#define MAX_XID 64
#define NO_ID 0xFFFFFFFFu

enum { OK = 0, UNINITIALIZED = 1, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, NOT_FOUND = 6, INSUFFICIENT_SIZE = 7,
       TIMEOUT = 10, GPU_IS_LOST = 15 };
enum fn { FN_UTIL, FN_MEMORY, FN_TEMP, FN_POWER, FN_CLOCK, FN_ENERGY, FN_COMPUTE, FN_GRAPHICS, FN_PROC_UTIL,
          FN_MIG, FN_ECC, FN_PAGES, FN_REMAP, FN_REASONS, FN_EVENTS, FN_GPM, FN_N };

struct proc {
    unsigned pid;
    unsigned long long vram;
    unsigned sm;
    int lists; /* bit 0 compute, bit 1 graphics */
    unsigned gi, ci; /* MIG instance, NO_ID without MIG */
};

/* A device, or a MIG instance of one (is_mig; its own UUID, memory, ids and
 * GPM figures; its processes are listed on the parent, with gi/ci). */
struct device {
    int is_mig;
    unsigned parent, gi, ci;
    char name[96], uuid[96], pci[32];
    unsigned util[MAX_UTIL], n_util;
    unsigned long long mem_total, mem_used, energy_mj, energy_step_mj;
    unsigned temp, power_mw, clock;
    int ret[FN_N];
    unsigned slow_us[FN_N]; /* CPU time each call of fn spins, like a slow driver */
    unsigned lost_after;
    struct proc procs[MAX_PROC];
    unsigned n_procs;
    int mig_capable, mig_mode;
    unsigned n_mig;
    unsigned long long ecc_corrected, ecc_uncorrected, reasons;
    unsigned retired_sbe, retired_dbe, remapped_corr, remapped_unc, remap_pending, remap_failure;
    int gpm;                                 /* GPM supported */
    double gpm_sm, gpm_occupancy, gpm_tensor, gpm_dram;
    unsigned xids[MAX_XID], n_xids;          /* every XID injected so far, in order */
};

/* What the device lived through since init; survives a configuration reload. */
struct runtime {
    unsigned util_pos, memory_calls;
    unsigned long long energy_added;
    int lost;          /* fake_nvml_set_lost */
    unsigned hang_ms;  /* the next memory query sleeps this long */
    unsigned xids_sent;
};

extern pthread_mutex_t mu;
extern pthread_cond_t changed;           /* signalled when the configuration is reloaded */
extern struct device devs[MAX_DEV];
extern struct device migs[MAX_DEV][MAX_MIG];
extern struct runtime rts[MAX_DEV];
extern unsigned n_devs;
extern int initialized;

enum ctr { C_INIT, C_SHUTDOWN, C_COMPUTE_V3, C_COMPUTE_V2, C_COMPUTE_V1, C_GRAPHICS_V3, C_GRAPHICS_V2,
           C_GRAPHICS_V1, C_INSUFFICIENT, C_PROC_UTIL, C_PCI_V3, C_PCI_V1, C_EVENT_WAIT, C_GPM_METRICS,
           C_MIG_HANDLE, C_ECC, C_ENERGY, C_MIG_MODE, C_N };
extern unsigned long ctrs[C_N];

/* Reload the configuration file when it changed (under mu). */
void fake_maybe_reload(void);
/* Common entry of per-device calls (under mu): lost devices and the
 * configured failures of fn; a MIG instance answers for its parent. */
int fake_enter(struct device *d, enum fn f);
/* The index of a (parent) device, for runtime state. */
unsigned fake_index(const struct device *d);

#endif
