#include "insight/options.h"

#include "ctl.h"
#include "insight/analysis.h"
#include "rt/util.h"

#include <string.h>

bool insight_opt_history(const char *verb, const char *arg, unsigned *out)
{
    uint64_t v;
    if (!rt_parse_u64(arg, &v) || v > INSIGHT_MAX_HISTORY) {
        CTL_ERR("%s: --history needs a whole number of earlier runs from 0 to %d, not '%s'", verb,
                INSIGHT_MAX_HISTORY, arg);
        return false;
    }
    *out = (unsigned)v;
    return true;
}

bool insight_opt_job(const char *verb, int argc, char **argv, int optind_)
{
    if (argc - optind_ > 1)
        CTL_ERR("%s: unexpected argument %s (one JOB only)", verb, argv[optind_ + 1]);
    else if (argc - optind_ < 1)
        CTL_ERR("%s needs a JOB (an id or a name)", verb);
    return argc - optind_ == 1;
}

void insight_opt_error(const char *verb, int c, char **argv, int optind_, int optopt_)
{
    const char *arg = argv[optind_ - 1];
    char opt[64];
    /* A short option may sit in a cluster ("-xo"): name the letter. */
    if (arg[0] == '-' && arg[1] != '-' && optopt_)
        snprintf(opt, sizeof(opt), "-%c", optopt_);
    else
        snprintf(opt, sizeof(opt), "%.*s", (int)strcspn(arg, "="), arg);
    if (c == ':')
        CTL_ERR("%s: %s needs a value", verb, opt);
    else if (strchr(arg, '=') && arg[1] == '-')
        CTL_ERR("%s: %s takes no value, or is an unknown option", verb, opt);
    else
        CTL_ERR("%s: unknown option %s", verb, opt);
}
