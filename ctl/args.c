/* getopt_long from option descriptions; the shared options; messages. */
#include "args.h"

#include "rt/util.h"

#include <stdarg.h>
#include <string.h>

#define OPT_JSON (CTL_OPT_LONG + 0xff)

static const struct ctl_opt opt_help = {"help", 'h', NULL, NULL, CTL_KIND_NONE};
static const struct ctl_opt opt_json = {"json", OPT_JSON, NULL, NULL, CTL_KIND_NONE};
static const struct ctl_opt opt_format = {"format", 'f', "FORMAT", NULL, CTL_KIND_FORMAT};

static const struct ctl_opt global_opts[] = {
    {"socket", CTL_GLOBAL_SOCKET, "PATH", NULL, CTL_KIND_FILE},
    {"json", CTL_GLOBAL_JSON, NULL, NULL, CTL_KIND_NONE},
    {"format", 'f', "FORMAT", "a format is text, json or csv", CTL_KIND_FORMAT},
    {"version", 'V', NULL, NULL, CTL_KIND_NONE},
    {NULL, 0, NULL, NULL, CTL_KIND_NONE},
};

/* The options before the verb; main() and completion read them. */
const struct ctl_spec ctl_global_spec = {
    .opts = global_opts,
    .in_order = true,
    .operand = CTL_KIND_VERB,
};

void ctl_args_each(const struct ctl_spec *spec, void (*fn)(const struct ctl_opt *, void *), void *data)
{
    for (const struct ctl_opt *o = spec->opts; o && o->name; o++)
        fn(o, data);
    for (const struct ctl_opt *o = spec->more; o && o->name; o++)
        fn(o, data);
    if (spec->formats) {
        fn(&opt_json, data);
        fn(&opt_format, data);
    }
    fn(&opt_help, data);
}

struct find {
    int val;
    const struct ctl_opt *found;
};

static void find_one(const struct ctl_opt *o, void *data)
{
    struct find *f = data;
    if (o->val == f->val && !f->found)
        f->found = o;
}

const struct ctl_opt *ctl_args_find(const struct ctl_spec *spec, int val)
{
    struct find f = {val, NULL};
    ctl_args_each(spec, find_one, &f);
    return f.found;
}

static void add_opt(const struct ctl_opt *o, void *data)
{
    struct ctl_args *a = data;
    size_t n = 0;
    while (a->longopts[n].name)
        n++;
    if (n >= RT_ARRAY_SIZE(a->longopts) - 1)
        return; /* CTL_MAX_OPTS is sized for the largest verb */
    a->longopts[n] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL, o->val};
    if (o->val < CTL_OPT_LONG) {
        size_t len = strlen(a->shortopts);
        a->shortopts[len++] = (char)o->val;
        if (o->arg)
            a->shortopts[len++] = ':';
        a->shortopts[len] = '\0';
    }
}

void ctl_args_init(struct ctl_args *a, struct ctl *ctl, const struct ctl_spec *spec)
{
    memset(a, 0, sizeof(*a));
    a->ctl = ctl;
    a->spec = spec;
    /* '+': stop at the first argument; ':': report a missing value apart. */
    strcpy(a->shortopts, spec->in_order ? "+:" : ":");
    ctl_args_each(spec, add_opt, a);
    optind = 0; /* a fresh scan: the global options were parsed before */
    opterr = 0; /* our own messages */
}

static const char *format_name(unsigned bit)
{
    return bit == CTL_FMT_TEXT ? "text" : bit == CTL_FMT_JSON ? "json" : "csv";
}

const char *ctl_format_names(unsigned mask, char *buf, size_t size)
{
    size_t n = 0, count = 0, total = (size_t)__builtin_popcount(mask);
    buf[0] = '\0';
    for (unsigned bit = CTL_FMT_TEXT; bit <= CTL_FMT_CSV; bit <<= 1) {
        if (!(mask & bit))
            continue;
        count++;
        const char *sep = count == 1 ? "" : count == total ? " or " : ", ";
        n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s", sep, format_name(bit));
    }
    return buf;
}

unsigned ctl_format_parse(const char *name)
{
    if (strcmp(name, "text") == 0)
        return CTL_FMT_TEXT;
    if (strcmp(name, "json") == 0)
        return CTL_FMT_JSON;
    if (strcmp(name, "csv") == 0)
        return CTL_FMT_CSV;
    return 0;
}

static const char *rule_of(const struct ctl_args *a, const struct ctl_opt *o, char *buf, size_t size)
{
    if (o->kind == CTL_KIND_FORMAT && !o->rule) {
        char names[64];
        snprintf(buf, size, "%s prints %s", a->spec->verb, ctl_format_names(a->spec->formats, names, sizeof(names)));
        return buf;
    }
    return o->rule;
}

/* "VERB: MESSAGE" and where help is; every refusal of a command line. */
static int verror(const struct ctl_args *a, const char *fmt, va_list ap)
{
    const char *verb = a->spec->verb;
    char msg[1024];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    CTL_ERR("%s%s%s", verb ? verb : "", verb ? ": " : "", msg);
    fprintf(stderr, "Try 'resource-trackerctl %s%s--help'.\n", verb ? verb : "", verb ? " " : "");
    return RT_EXIT_USAGE;
}

int ctl_args_error(const struct ctl_args *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = verror(a, fmt, ap);
    va_end(ap);
    return rc;
}

int ctl_args_invalid(const struct ctl_args *a, int val, const char *value)
{
    const struct ctl_opt *o = ctl_args_find(a->spec, val);
    char rule[160], shown[160];
    ctl_fmt_cut(shown, sizeof(shown), value, 48);
    const char *r = o ? rule_of(a, o, rule, sizeof(rule)) : NULL;
    return ctl_args_error(a, "--%s '%s': %s", o ? o->name : "?", shown, r ? r : "not a valid value");
}

/* Whether name is one of the global options (a user may put one after the verb). */
static const struct ctl_opt *global_opt(const char *name, size_t len)
{
    for (const struct ctl_opt *o = ctl_global_spec.opts; o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
            return o;
    return NULL;
}

/* Print why getopt_long refused argv at optind (c is ':' or '?'). */
static void refused(const struct ctl_args *a, int c, char **argv)
{
    char rule[160];
    const struct ctl_opt *o = optopt ? ctl_args_find(a->spec, optopt) : NULL;
    const char *r = o ? rule_of(a, o, rule, sizeof(rule)) : NULL;
    if (c == ':' && o && r)
        ctl_args_error(a, "--%s needs a value: %s", o->name, r);
    else if (c == ':' && o)
        ctl_args_error(a, "--%s needs a value (%s)", o->name, o->arg);
    else if (o) /* "--help=x": a flag given a value (a short one never is) */
        ctl_args_error(a, "--%s takes no value", o->name);
    else if (optopt)
        ctl_args_error(a, "unknown option -%c", optopt);
    else {
        const char *arg = argv[optind - 1];
        int len = (int)strcspn(arg, "=");
        /* getopt_long takes unique prefixes of long names: name the candidates. */
        char cands[256] = "";
        int n = 0;
        for (const struct option *l = a->longopts; l->name; l++) {
            if (len > 2 && strncmp(l->name, arg + 2, (size_t)len - 2) == 0) {
                size_t k = strlen(cands);
                snprintf(cands + k, sizeof(cands) - k, "%s--%s", n++ ? ", " : "", l->name);
            }
        }
        const struct ctl_opt *g = a->spec != &ctl_global_spec ? global_opt(arg + 2, (size_t)len - 2) : NULL;
        if (n > 1)
            ctl_args_error(a, "%.*s is ambiguous: %s", len, arg, cands);
        else if (g && (g->val == CTL_GLOBAL_JSON || g->val == 'f')) /* a verb that has them knows them */
            ctl_args_error(a, "%s takes no --json or --format", a->spec->verb);
        else if (g)
            ctl_args_error(a, "--%s goes before the command: resource-trackerctl --%s%s%s %s ...", g->name,
                           g->name, g->arg ? " " : "", g->arg ? g->arg : "", a->spec->verb);
        else
            ctl_args_error(a, "unknown option %.*s", len, arg);
    }
}

/* The options are over: settle the output format. */
static int settle(struct ctl_args *a)
{
    struct ctl *ctl = a->ctl;
    unsigned mask = a->spec->formats;
    if (a->spec == &ctl_global_spec)
        return CTL_ARGS_END; /* the verb settles it */
    if (ctl->format && !(ctl->format & mask)) {
        char names[64];
        if (!mask)
            a->rc = ctl_args_error(a, "%s takes no --json or --format", a->spec->verb);
        else
            a->rc = ctl_args_error(a, "--format %s: %s prints %s", format_name(ctl->format), a->spec->verb,
                                   ctl_format_names(mask, names, sizeof(names)));
        return CTL_ARGS_STOP;
    }
    ctl->format_chosen = ctl->format != 0;
    if (!ctl->format)
        ctl->format = mask & -mask; /* the first: the default */
    ctl->json = ctl->format == CTL_FMT_JSON;
    return CTL_ARGS_END;
}

int ctl_args_next(struct ctl_args *a, int argc, char **argv)
{
    for (;;) {
        int c = getopt_long(argc, argv, a->shortopts, a->longopts, NULL);
        switch (c) {
        case -1:
            return settle(a);
        case 'h':
            if (!a->spec->usage)
                return c;
            fputs(a->spec->usage, stdout);
            a->rc = RT_EXIT_OK;
            return CTL_ARGS_STOP;
        case ':':
        case '?':
            refused(a, c, argv);
            a->rc = RT_EXIT_USAGE;
            return CTL_ARGS_STOP;
        case OPT_JSON:
            a->ctl->format = CTL_FMT_JSON;
            break;
        case 'f':
            if (!a->spec->formats)
                return c;
            a->ctl->format = ctl_format_parse(optarg);
            if (!a->ctl->format || !(a->ctl->format & a->spec->formats)) {
                a->rc = ctl_args_invalid(a, 'f', optarg);
                return CTL_ARGS_STOP;
            }
            break;
        default:
            return c;
        }
    }
}

int ctl_args_operands(struct ctl_args *a, int argc, char **argv, const char **out, int min, int max)
{
    char shown[160];
    int n = argc - optind;
    if (n > max) { /* out holds max */
        ctl_fmt_cut(shown, sizeof(shown), argv[optind + max], 48);
        return ctl_args_error(a, "unexpected argument '%s'", shown);
    }
    if (n < min) {
        enum ctl_kind k = a->spec->operand;
        if (k == CTL_KIND_JOB || k == CTL_KIND_RUNNING)
            return ctl_args_error(a, "needs a JOB: %s", CTL_RULE_JOB);
        return ctl_args_error(a, "%s", k == CTL_KIND_COMMAND ? "needs a COMMAND to run" : "needs an argument");
    }
    for (int i = 0; out && i < max; i++)
        out[i] = i < n ? argv[optind + i] : NULL;
    return 0;
}

const struct ctl_opt ctl_user_opts[] = {
    {"user", CTL_OPT_USER, "USER", "a USER is a user name or a numeric uid", CTL_KIND_USER},
    {NULL, 0, NULL, NULL, CTL_KIND_NONE},
};

int ctl_args_simple(struct ctl *ctl, const struct ctl_spec *spec, int argc, char **argv, const char **out, int min,
                    int max)
{
    struct ctl_args a;
    ctl_args_init(&a, ctl, spec);
    for (int o; (o = ctl_args_next(&a, argc, argv)) != CTL_ARGS_END;) {
        if (o == CTL_ARGS_STOP)
            return a.rc ? a.rc : -1;
        if (o == CTL_OPT_USER)
            ctl->user = optarg;
    }
    return ctl_args_operands(&a, argc, argv, out, min, max);
}
