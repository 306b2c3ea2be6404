/* status --follow: the host samples as they are taken, for scripts and people. */
#ifndef CTL_LIVE_FOLLOW_H
#define CTL_LIVE_FOLLOW_H

#include "ctl.h"

/* JSON Lines (the host sample of docs/output.md), CSV (the 32 columns,
 * header first, process columns empty) or, for people, a line of text per
 * sample as vmstat prints them (format: a CTL_FMT_* bit) on stdout until
 * interrupted. Returns an RT_EXIT_* code. */
int ctl_follow_host(struct ctl *ctl, unsigned format);

#endif
