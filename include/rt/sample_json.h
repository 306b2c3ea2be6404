/* JSON form of a sample (docs/output.md): keys sorted at every level, like
 * the Rust tracker's output; job fields null on host samples. */
#ifndef RT_SAMPLE_JSON_H
#define RT_SAMPLE_JSON_H

#include "rt/sample.h"

#include <json-c/json.h>
#include <json-c/printbuf.h>
#include <stddef.h>

#define RT_SAMPLE_VERSION_KEY "resource-tracker-version"

/* Its JSON text, appended to pb (the daemon's way: no tree is built). */
void rt_sample_json_text(const struct rt_sample *s, struct printbuf *pb);
/* The same as a tree (rt_sample_json_text's text parsed, each number kept
 * as written). */
struct json_object *rt_sample_to_json(const struct rt_sample *s);
/* Overwrite the job-specific keys (job_id, job_name, tracked_pid and the
 * cpu.process_* fields) of a tree made by rt_sample_to_json, so one host tree
 * can be serialised once per job without rebuilding it. */
void rt_sample_json_set_job(struct json_object *root, const struct rt_sample *s);
/* Parse a sample back (lenient: missing keys keep their zero/null values).
 * Returns 0, or -1 with a message in err when o is not a sample. */
int rt_sample_from_json(struct json_object *o, struct rt_sample *s, char *err, size_t errlen);

#endif
