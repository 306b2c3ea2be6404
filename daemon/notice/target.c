#include "notice/target.h"

#include "rt/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int refuse(char *why, size_t whylen, const char *reason)
{
    snprintf(why, whylen, "%s", reason);
    return -EINVAL;
}

/* One plain address: LOCAL or LOCAL@DOMAIN; nothing a header or sendmail's
 * command line could take for more. */
static bool plain_address(const char *a)
{
    const char *at = strchr(a, '@');
    size_t local = at ? (size_t)(at - a) : strlen(a);
    if (local == 0 || local > 64 || a[0] == '-' || a[0] == '.')
        return false;
    for (size_t i = 0; i < local; i++)
        if (!isalnum((unsigned char)a[i]) && !strchr("._+-", a[i]))
            return false;
    if (!at)
        return true;
    const char *d = at + 1;
    size_t n = strlen(d);
    if (n == 0 || n > 253 || d[0] == '.' || d[0] == '-' || d[n - 1] == '.' || strstr(d, ".."))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)d[i]) && d[i] != '.' && d[i] != '-')
            return false;
    return true;
}

int rt_notice_target_check(const char *t, char *why, size_t whylen)
{
    size_t n = strlen(t);
    if (n == 0 || n > RT_NOTICE_TARGET_MAX)
        return refuse(why, whylen, "a target is a URL or mailto:ADDRESS of at most 2048 bytes");
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)t[i] <= 0x20 || t[i] == 0x7f)
            return refuse(why, whylen, "white space or a control character in the target");
    if (strncasecmp(t, "mailto:", 7) == 0) {
        if (!plain_address(t + 7))
            return refuse(why, whylen, "mailto: takes one plain address (user or user@domain.example)");
        return RT_NOTICE_MAIL;
    }
    const char *host = strncasecmp(t, "https://", 8) == 0 ? t + 8 : strncasecmp(t, "http://", 7) == 0 ? t + 7 : NULL;
    if (!host)
        return refuse(why, whylen, "a target is an http:// or https:// URL (a webhook) or mailto:ADDRESS");
    if (!*host || *host == '/' || *host == '?' || *host == '#')
        return refuse(why, whylen, "the URL has no host");
    return RT_NOTICE_WEBHOOK;
}

int rt_notice_targets_check(struct json_object *targets, char *why, size_t whylen)
{
    char scratch[8];
    if (!why) {
        why = scratch;
        whylen = sizeof(scratch);
    }
    size_t n = json_object_is_type(targets, json_type_array) ? json_object_array_length(targets) : 0;
    if (!json_object_is_type(targets, json_type_array) || n > RT_NOTICE_MAX_TARGETS)
        return refuse(why, whylen, "at most 4 targets");
    for (size_t i = 0; i < n; i++) {
        struct json_object *t = json_object_array_get_idx(targets, i);
        if (!json_object_is_type(t, json_type_string))
            return refuse(why, whylen, "a target is a string");
        if (rt_notice_target_check(json_object_get_string(t), why, whylen) < 0)
            return -EINVAL;
        for (size_t k = 0; k < i; k++)
            if (strcmp(json_object_get_string(json_object_array_get_idx(targets, k)), json_object_get_string(t)) == 0)
                return refuse(why, whylen, "a target is given twice");
    }
    return 0;
}

struct json_object *rt_notice_targets_for(struct json_object *own, struct json_object *defaults, bool adopted,
                                          const char *adopted_template, bool every_job, bool failed_or_noted)
{
    if (own && json_object_array_length(own))
        return json_object_get(own);
    if (defaults && json_object_array_length(defaults))
        return json_object_get(defaults);
    if (!adopted || !adopted_template || !*adopted_template || !(every_job || failed_or_noted))
        return NULL;
    struct json_object *t = json_object_new_array();
    json_object_array_add(t, json_object_new_string(adopted_template));
    return t;
}

bool rt_notice_target_expand(const char *target, const char *user, char *out, size_t size)
{
    size_t n = 0, ul = strlen(user);
    for (const char *p = target; *p; p++) {
        bool u = p[0] == '%' && p[1] == 'u';
        size_t add = u ? ul : 1;
        if (n + add >= size)
            return false;
        memcpy(out + n, u ? user : p, add);
        n += add;
        p += u;
    }
    out[n] = '\0';
    return true;
}

void rt_notice_target_redact(const char *t, char *out, size_t size)
{
    if (strncasecmp(t, "mailto:", 7) == 0) {
        rt_strlcpy(out, t, size);
        return;
    }
    const char *host = strstr(t, "://");
    host = host ? host + 3 : t;
    size_t end = strcspn(host, "/?#"), scheme = (size_t)(host - t);
    /* user:password@ is no host to show */
    const char *at = memchr(host, '@', end);
    if (at) {
        end -= (size_t)(at + 1 - host);
        host = at + 1;
    }
    snprintf(out, size, "%.*s%.*s/…", (int)scheme, t, (int)end, host);
}

const char *rt_notice_target_address(const char *t)
{
    return strncasecmp(t, "mailto:", 7) == 0 ? t + 7 : t;
}
