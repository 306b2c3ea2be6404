/* The configuration's keys, described once (keys.c), and how one value is
 * read and written (value.c): shared by config.c and value.c only. */
#ifndef RT_CONFIG_KEYS_H
#define RT_CONFIG_KEYS_H

#include "config/config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define USEC_PER_SEC 1000000ULL
#define KIB 1024ULL
#define MIB (1024ULL * KIB)
#define GIB (1024ULL * MIB)
#define TIB (1024ULL * GIB)

enum kind {
    K_SECS_DOUBLE,   /* duration stored as double seconds */
    K_SECS_U64,      /* duration, whole seconds, uint64_t */
    K_SECS_UINT,     /* duration, whole seconds, unsigned */
    K_BYTES_U64,     /* size, uint64_t */
    K_BYTES_SIZE,    /* size, size_t */
    K_UINT,          /* plain count, unsigned */
    K_SOCKET,        /* absolute path that fits sun_path */
    K_PATH,          /* absolute path */
    K_GROUP,         /* group name or "" */
    K_URL,           /* http(s) URL or "" */
    K_NOTIFY,        /* a notification target (notice/target.h), %u for a user's name, or "" */
    K_GLOBS,         /* cgroup path patterns separated by spaces (jobs/adopt.h), or "" */
    K_CREDENTIAL,    /* systemd credential name */
    K_REGION,        /* S3 region name ("us-east-1") or "" */
    K_LOGLEVEL,      /* syslog level name, stored as int */
    K_BOOL,
};

enum where {
    FILE_KEY,            /* the file and the command line */
    CLI_ONLY,            /* not accepted in the file */
};

enum apply {
    RESTART,             /* a running daemon keeps its value until restarted */
    LIVE,                /* a reload applies it at once */
};

struct key {
    const char *path;    /* "upload.interval" */
    const char *group;   /* NULL: top level */
    const char *name;
    enum kind kind;
    uint64_t bit;
    size_t offset, size;
    uint64_t min, max;   /* usec for durations, bytes for sizes, count */
    enum where where;
    const char *dflt;    /* the default, as written on the command line */
    enum apply apply;
};

/* One row per key (keys.c): where it is read, its kind and bounds, its
 * default and whether a reload applies it at once. */
#define RT_CONFIG_MAX_KEYS 64
extern const struct key rt_config_keys[];
extern const size_t rt_config_nkeys;
extern const char *const rt_config_groups[];
extern const size_t rt_config_ngroups;

struct raw {
    int type;            /* CONFIG_TYPE_* */
    long long i;
    double f;
    const char *s;
    bool cli;
};


void rt_config_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *rt_config_type_name(int type);
void rt_config_format_size(uint64_t bytes, char *buf, size_t size);
/* Parse and check r for k and store it in c; why says what is wrong. */
int rt_config_set_value(const struct key *k, const struct raw *r, struct rt_config *c, char *why, size_t whylen);
/* k's value in c as the file writes it. */
void rt_config_write_value(FILE *f, const struct key *k, const struct rt_config *c);

#endif
