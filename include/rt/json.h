/* json-c helpers: number formatting that matches the documented output
 * (shortest round-trip doubles that always carry a '.'), and typed getters. */
#ifndef RT_JSON_H
#define RT_JSON_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A double rounded to `decimals` places (no rounding when negative), written
 * in the shortest form that reads back to the same value; NULL (JSON null) for
 * NaN or infinity. */
struct json_object *rt_json_double(double v, int decimals);
/* Its text into buf (NUL-terminated): the length, 0 for NaN or infinity. */
#define RT_JSON_DOUBLE_MAX 64
size_t rt_json_format_double(double v, int decimals, char buf[RT_JSON_DOUBLE_MAX]);
struct json_object *rt_json_string_or_null(const char *s);
struct json_object *rt_json_u64(uint64_t v);

/* Typed lookups: false when the key is missing, null or of another type. */
bool rt_json_get_u64(struct json_object *o, const char *key, uint64_t *out);
bool rt_json_get_i64(struct json_object *o, const char *key, int64_t *out);
bool rt_json_get_double(struct json_object *o, const char *key, double *out);
bool rt_json_get_bool(struct json_object *o, const char *key, bool *out);
const char *rt_json_get_string(struct json_object *o, const char *key);
struct json_object *rt_json_get_object(struct json_object *o, const char *key);
struct json_object *rt_json_get_array(struct json_object *o, const char *key);

/* Every string in o (values, not keys) that is not well-formed UTF-8 gets
 * its stray bytes as \xHH (rt_utf8_escape): what the protocol accepts. */
void rt_json_utf8_escape(struct json_object *o);

/* Compact serialisation without escaping '/'. */
const char *rt_json_plain(struct json_object *o);
/* s[0..len) as a JSON string (quotes included) appended to pb, escaped as
 * rt_json_plain escapes a string: a large text without a json-c object. */
void rt_json_put_string(struct printbuf *pb, const char *s, size_t len);

#endif
