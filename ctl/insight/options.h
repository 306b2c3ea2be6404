/* Option values shared by the insight verbs (parsed with getopt_long,
 * optstring starting with ':' so that we word the errors). */
#ifndef RT_INSIGHT_OPTIONS_H
#define RT_INSIGHT_OPTIONS_H

#include <stdbool.h>

/* --history N: a whole number from 0 to INSIGHT_MAX_HISTORY. false after
 * printing a message that names the option and the rule. */
bool insight_opt_history(const char *verb, const char *arg, unsigned *out);
/* After the options: exactly one JOB argument. false after printing why. */
bool insight_opt_job(const char *verb, int argc, char **argv, int optind_);
/* Print the error for getopt_long's ':' (a value is missing) or '?' (not
 * an option of the verb) at argv[optind - 1]. */
void insight_opt_error(const char *verb, int c, char **argv, int optind_, int optopt_);

#endif
