/* The command line: getopt_long driven by one description per option, the
 * options every verb shares (-h/--help; --json and -f/--format where a verb
 * prints tables or samples), and messages that name the option and the rule
 * its value breaks.
 *
 * A verb describes itself in a struct ctl_spec (its options, output formats
 * and what its arguments are: also read by help and shell completion) and
 * parses with
 *
 *     struct ctl_args a;
 *     ctl_args_init(&a, ctl, &my_spec);
 *     for (int o; (o = ctl_args_next(&a, argc, argv)) != CTL_ARGS_END;) {
 *         switch (o) {
 *         case CTL_ARGS_STOP: return a.rc;          (--help printed, or an error)
 *         case 'p': if (!ctl_parse_pid(optarg, &pid)) return ctl_args_invalid(&a, 'p', optarg); break;
 *         }
 *     }
 *     rc = ctl_args_operands(&a, argc, argv, pos, min, max);
 */
#ifndef RT_CTL_ARGS_H
#define RT_CTL_ARGS_H

#include "ctl.h"

#include "rt/text.h"

#include <getopt.h>
#include <stdint.h>

/* A code for a long option without a short letter: CTL_OPT_LONG + n. */
#define CTL_OPT_LONG 0x100

/* Rules, said in messages and --help (one wording everywhere). */
#define CTL_RULE_NAME RT_NAME_RULE
#define CTL_RULE_TAG "a tag is KEY=VALUE, KEY not empty, at most 4096 bytes"
#define CTL_RULE_META "a metadata value is at most 4096 bytes"
#define CTL_META_MAX_VALUE 4096
#define CTL_RULE_PID "a process ID is a whole number above 0"
#define CTL_RULE_INTERVAL "an interval is a number of seconds from 0.1 to 3600"
#define CTL_RULE_JOB "a JOB is a job's id or its name"

/* What the value of an option, or an argument, is: for completion. */
enum ctl_kind {
    CTL_KIND_NONE,     /* free text, or no value */
    CTL_KIND_FILE,
    CTL_KIND_PID,
    CTL_KIND_USER,
    CTL_KIND_JOB,      /* a job's id or name */
    CTL_KIND_RUNNING,  /* a running job's id or name */
    CTL_KIND_NAME,     /* a job name */
    CTL_KIND_FORMAT,   /* one of the verb's formats */
    CTL_KIND_COMMAND,  /* a command and its arguments (run) */
    CTL_KIND_VERB,     /* a verb (help) */
};

struct ctl_opt {
    const char *name;   /* long name without "--"; NULL ends a table */
    int val;            /* its short letter, or CTL_OPT_LONG + n */
    const char *arg;    /* the value's placeholder ("PID"); NULL for a flag */
    const char *rule;   /* what a value must be, in messages; NULL: any text */
    enum ctl_kind kind; /* what the value is, for completion */
};

/* A verb's command line. */
struct ctl_spec {
    const char *verb;
    const char *usage;          /* --help prints it; NULL: ctl_args_next returns 'h' */
    const struct ctl_opt *opts; /* the verb's own options, or NULL */
    const struct ctl_opt *more; /* options it shares with other verbs (run's metadata), or NULL */
    unsigned formats;           /* CTL_FMT_* it prints, the first the default: adds --json, -f/--format */
    bool in_order;              /* options end at the first argument (run: the command follows) */
    enum ctl_kind operand;      /* what its arguments are */
};

/* run's and start's metadata options (metadata.c; ctl_meta_option takes
 * them), and their lines in --help. */
extern const struct ctl_opt ctl_meta_opts[];
#define CTL_META_USAGE                                                                   \
    "  -n, --job-name NAME     the job's name ($TRACKER_JOB_NAME): 1-128 characters,\n"   \
    "                          no control characters, not all digits\n"                   \
    "  -i, --interval SECS     the job's sampling interval, 0.1 to 3600, kept exactly\n"   \
    "  --project-name, --stage-name, --task-name, --team, --env, --language,\n"            \
    "  --orchestrator, --executor, --external-run-id, --container-image VALUE\n"           \
    "                          metadata ($TRACKER_PROJECT_NAME, ... likewise)\n"           \
    "  --tag KEY=VALUE         a free-form tag, repeatable\n"                              \
    "  --request SPEC          what the job asks for, cpus=N,mem=SIZE,gpus=N ($TRACKER_REQUEST):\n" \
    "                          its efficiency and notes compare its use with it\n"          \
    "  --notify TARGET         tell TARGET when the job ends: a webhook URL or\n"           \
    "                          mailto:ADDRESS; up to 4 ($TRACKER_NOTIFY, space-separated)\n"

/* -u, --user USER: whose jobs a JOB name is looked up among (an
 * administrator's choice; stop, status, samples). ctl_args_simple keeps it
 * in ctl->user. */
enum { CTL_OPT_USER = 'u' };
extern const struct ctl_opt ctl_user_opts[];
#define CTL_USER_USAGE \
    "  -u, --user USER         a JOB name means USER's job (administrators; a name or a uid)\n"

/* The verbs (main.c's table, ending in a NULL name). */
struct ctl_verb {
    const char *name;
    int (*fn)(struct ctl *ctl, int argc, char **argv);
    const struct ctl_spec *spec; /* NULL: the verb parses its options by itself */
    const char *synopsis;        /* its arguments, for the overview in --help */
    const char *summary;         /* NULL: hidden */
};
extern const struct ctl_verb ctl_verbs[];
const struct ctl_verb *ctl_verb_find(const char *name); /* help.c */
/* The options before the verb. */
enum { CTL_GLOBAL_SOCKET = CTL_OPT_LONG, CTL_GLOBAL_JSON };
extern const struct ctl_spec ctl_global_spec;
/* The overview: verbs, global options, exit status (help.c). */
void ctl_usage(FILE *f);

#define CTL_MAX_OPTS 40

/* Parsing state of one command line. */
struct ctl_args {
    struct ctl *ctl;
    const struct ctl_spec *spec;
    int rc; /* after CTL_ARGS_STOP: the exit status (0 after --help) */
    struct option longopts[CTL_MAX_OPTS + 4];
    char shortopts[3 * CTL_MAX_OPTS + 8];
};

enum { CTL_ARGS_END = -1, CTL_ARGS_STOP = -2 };

void ctl_args_init(struct ctl_args *a, struct ctl *ctl, const struct ctl_spec *spec);
/* The next option: a verb option's val (its value in optarg), CTL_ARGS_END
 * when the options are over (arguments from optind; the output format is
 * settled), or CTL_ARGS_STOP when the verb must return a->rc. The shared
 * options are handled here. */
int ctl_args_next(struct ctl_args *a, int argc, char **argv);
/* The arguments after the options into out[0..max) (out may be NULL), the missing ones NULL:
 * 0, or RT_EXIT_USAGE after a message when there are fewer than min or more
 * than max. */
int ctl_args_operands(struct ctl_args *a, int argc, char **argv, const char **out, int min, int max);
/* The whole command line of a verb with no options of its own (but
 * ctl_user_opts): 0 with its arguments in out[0..max), -1 after --help (exit
 * 0), or RT_EXIT_USAGE. */
int ctl_args_simple(struct ctl *ctl, const struct ctl_spec *spec, int argc, char **argv, const char **out, int min,
                    int max);
/* "VERB: MESSAGE" and where to find help, for a command line the verb
 * refuses; returns RT_EXIT_USAGE. */
int ctl_args_error(const struct ctl_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "--pid 'x': a process ID is …" for a value the verb refused; returns RT_EXIT_USAGE. */
int ctl_args_invalid(const struct ctl_args *a, int val, const char *value);
/* The option with this val among the verb's and the shared ones, or NULL. */
const struct ctl_opt *ctl_args_find(const struct ctl_spec *spec, int val);
/* Each option a verb takes, the shared ones included: fn(opt, data). */
void ctl_args_each(const struct ctl_spec *spec, void (*fn)(const struct ctl_opt *, void *), void *data);
/* "text, json or csv": the formats in mask. */
const char *ctl_format_names(unsigned mask, char *buf, size_t size);
/* A format by name: its CTL_FMT_* bit, or 0. */
unsigned ctl_format_parse(const char *name);

/* Values. Each returns false when s is not one. */
bool ctl_parse_pid(const char *s, int64_t *out);
bool ctl_parse_count(const char *s, int64_t *out);  /* a whole number above 0 */
bool ctl_parse_secs(const char *s, double *out);    /* a job's interval: 0.1 to 3600 seconds */
/* A user: a name (the passwd database's), else a uid. */
bool ctl_parse_user(const char *s, int64_t *uid);
/* A point in time: a date/time in local time ("2026-01-31", "2026-01-31
 * 14:00[:05]", 'T' also, "14:00" today, "today", "yesterday", "@UNIX") or a
 * duration ago ("90s", "30m", "2h", "3d", "1w", "1h30m"). now: Unix seconds. */
bool ctl_parse_since(const char *s, double now, double *out);
#define CTL_RULE_SINCE                                                                                    \
    "a time is a date/time (2026-01-31, \"2026-01-31 14:00\", 14:00, today, @UNIX-SECONDS) or a duration " \
    "ago (90s, 30m, 2h, 3d, 1w, 1h30m)"

/* Where a daemon parameter's value came from ("--job-name", "TRACKER_JOB_NAME"),
 * so that the daemon's InvalidParameter names it and its rule. */
void ctl_args_source(const char *param, const char *source, const char *value);
/* Where the value of a daemon parameter came from (param when not said). */
const char *ctl_args_source_of(const char *param);
/* Print the message for the daemon's InvalidParameter(param). */
void ctl_args_report_param(const char *param);

#endif
