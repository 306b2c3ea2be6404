/* status --follow: the host samples as they are taken, for scripts. */
#ifndef CTL_LIVE_FOLLOW_H
#define CTL_LIVE_FOLLOW_H

#include "ctl.h"

/* JSON Lines (the host sample of docs/output.md) or CSV (the 32 columns,
 * header first, process columns empty) on stdout until interrupted. Returns
 * an RT_EXIT_* code. */
int ctl_follow_host(struct ctl *ctl, bool csv);

#endif
