#include "notice/defaults.h"

#include "notice/target.h"
#include "rt/json.h"
#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIR_NAME "notify"
#define FILE_MAX (RT_NOTICE_MAX_TARGETS * (RT_NOTICE_TARGET_MAX + 8) + 64)

struct json_object *rt_notice_defaults_get(int state_fd, uid_t uid)
{
    char path[64], buf[FILE_MAX + 1], why[128];
    snprintf(path, sizeof(path), DIR_NAME "/%u.json", (unsigned)uid);
    ssize_t n = rt_read_file_at(state_fd, path, buf, sizeof(buf));
    if (n <= 0)
        return NULL;
    struct json_object *o = json_tokener_parse(buf), *t = rt_json_get_array(o, "targets"), *out = NULL;
    size_t k = t ? json_object_array_length(t) : 0;
    bool ok = k > 0 && k <= RT_NOTICE_MAX_TARGETS;
    for (size_t i = 0; ok && i < k; i++) {
        struct json_object *s = json_object_array_get_idx(t, i);
        ok = json_object_is_type(s, json_type_string) &&
             rt_notice_target_check(json_object_get_string(s), why, sizeof(why)) > 0;
    }
    if (ok)
        out = json_object_get(t);
    json_object_put(o);
    explicit_bzero(buf, sizeof(buf));
    return out;
}

int rt_notice_defaults_set(int state_fd, uid_t uid, struct json_object *targets)
{
    char path[64];
    snprintf(path, sizeof(path), DIR_NAME "/%u.json", (unsigned)uid);
    if (!targets || json_object_array_length(targets) == 0)
        return unlinkat(state_fd, path, 0) == 0 || errno == ENOENT ? 0 : -errno;
    if (mkdirat(state_fd, DIR_NAME, 0700) < 0 && errno != EEXIST)
        return -errno;
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "targets", json_object_get(targets));
    size_t len;
    const char *txt = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
    int r = rt_write_file_at(state_fd, path, txt, len, 0600, RT_SYNC_DATA);
    json_object_put(o);
    return r;
}
