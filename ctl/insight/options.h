/* Option values shared by the insight verbs. */
#ifndef RT_INSIGHT_OPTIONS_H
#define RT_INSIGHT_OPTIONS_H

#include <stdbool.h>

#define INSIGHT_RULE_HISTORY "a history is a whole number of earlier runs from 0 to 100"

/* --history N: a whole number from 0 to INSIGHT_MAX_HISTORY. */
bool insight_opt_history(const char *arg, unsigned *out);

#endif
