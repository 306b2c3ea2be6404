#include "insight/options.h"

#include "insight/analysis.h"
#include "rt/util.h"

_Static_assert(INSIGHT_MAX_HISTORY == 100, "INSIGHT_RULE_HISTORY says 100");

bool insight_opt_history(const char *arg, unsigned *out)
{
    uint64_t v;
    if (!rt_parse_u64(arg, &v) || v > INSIGHT_MAX_HISTORY)
        return false;
    *out = (unsigned)v;
    return true;
}
