/* Command line of resource-trackerd. */
#ifndef RT_OPTIONS_H
#define RT_OPTIONS_H

#include "daemon.h"

#include <stdbool.h>
#include <stdio.h>

struct rt_options {
    bool check_config;
    bool help, version;
    enum rt_log_target_opt { RT_LOGT_AUTO, RT_LOGT_STDERR, RT_LOGT_JOURNAL } log_target;
};

/* Parse argv into d->cfg (defaults first, flags on top). Returns 0, or the
 * exit code to use (2 for usage errors) after printing a message. */
int rt_options_parse(int argc, char **argv, struct rt_daemon *d, struct rt_options *o);
void rt_options_usage(FILE *f);

#endif
