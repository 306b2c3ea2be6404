/* One state machine per vendor. p->step names the response being handled;
 * each case either starts the next request or ends the probe. What each
 * vendor exposes, and where we differ from the reference implementations:
 * docs/host-and-cloud.md. */
#include "facts/cloud_probe.h"

#include "rt/json.h"
#include "rt/util.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

const char *const rt_cloud_vendor_ids[RT_CLOUD_VENDORS] = {
    "aws", "gcp", "azure", "hcloud", "upcloud", "vultr", "alicloud", "ovh",
};

#define IMDS false
#define ALICLOUD true

/* Single-line printable values only, never "unknown"; anything else (an
 * HTML error page, an oversized value) stays unknown. */
static void keep(char *dst, const char *value)
{
    dst[0] = '\0';
    if (!value || !*value || strcmp(value, "unknown") == 0 || strlen(value) >= RT_CLOUD_STR)
        return;
    for (const char *c = value; *c; c++)
        if (!isprint((unsigned char)*c))
            return;
    rt_strlcpy(dst, value, RT_CLOUD_STR);
}

static void keep_body(char *dst, const struct rt_cloud_response *r)
{
    keep(dst, r->ok ? r->body : NULL);
}

static void keep_json(char *dst, struct json_object *o, const char *key)
{
    keep(dst, rt_json_get_string(o, key));
}

static struct json_object *body_json(const struct rt_cloud_response *r)
{
    return r->ok ? json_tokener_parse(r->body) : NULL;
}

static void found(struct rt_cloud_probe *p)
{
    p->confirmed = true;
    rt_cloud_probe_end(p);
}

static void fail(struct rt_cloud_probe *p)
{
    p->confirmed = false;
    rt_cloud_probe_end(p);
}

/* A session token goes into a header: refuse anything that could break it. */
static bool keep_token(struct rt_cloud_probe *p, const struct rt_cloud_response *r)
{
    if (!r->ok || strlen(r->body) >= sizeof(p->token))
        return false;
    for (const char *c = r->body; *c; c++)
        if (!isgraph((unsigned char)*c))
            return false;
    rt_strlcpy(p->token, r->body, sizeof(p->token));
    return true;
}

/* GET with the session token header when IMDSv2 gave one. */
static void token_get(struct rt_cloud_run *run, struct rt_cloud_probe *p, int next, bool base,
                      const char *token_header, const char *path)
{
    char header[sizeof(p->token) + 64];
    snprintf(header, sizeof(header), "%s: %s", token_header, p->token);
    rt_cloud_get(run, p, next, base, path, p->token[0] ? header : NULL);
}

/* IMDSv2 token, else IMDSv1; services/domain tells EC2 from the clouds that
 * copy its metadata API (OpenStack/OVH). */
static void aws(struct rt_cloud_run *run, struct rt_cloud_probe *p, const struct rt_cloud_response *r)
{
    static const char token_header[] = "X-aws-ec2-metadata-token";
    struct json_object *o;
    switch (p->step) {
    case 0:
        rt_cloud_put(run, p, 1, IMDS, "/latest/api/token", "X-aws-ec2-metadata-token-ttl-seconds: 21600");
        return;
    case 1:
        if (keep_token(p, r))
            token_get(run, p, 3, IMDS, token_header, "/latest/meta-data/services/domain");
        else
            rt_cloud_get(run, p, 2, IMDS, "/latest/meta-data/", NULL);
        return;
    case 2:
        if (r->ok)
            token_get(run, p, 3, IMDS, token_header, "/latest/meta-data/services/domain");
        else
            fail(p);
        return;
    case 3:
        if (!r->ok || strcmp(r->body, "amazonaws.com") != 0) {
            fail(p);
            return;
        }
        p->confirmed = true;
        token_get(run, p, 4, IMDS, token_header, "/latest/meta-data/placement/region");
        return;
    case 4:
        keep_body(p->info.region_id, r);
        token_get(run, p, 5, IMDS, token_header, "/latest/meta-data/placement/availability-zone");
        return;
    case 5:
        keep_body(p->info.zone_id, r);
        token_get(run, p, 6, IMDS, token_header, "/latest/meta-data/instance-type");
        return;
    case 6:
        keep_body(p->info.instance_type, r);
        token_get(run, p, 7, IMDS, token_header, "/latest/meta-data/identity-credentials/ec2/info");
        return;
    case 7:
        /* Real IMDS pretty-prints this JSON ("AccountId" : "…"): parse it. */
        o = body_json(r);
        keep_json(p->info.account_id, o, "AccountId");
        json_object_put(o);
        found(p);
        return;
    }
}

static const char *last_segment(const char *s)
{
    const char *slash = strrchr(s, '/');
    return slash ? slash + 1 : s;
}

/* GCP's metadata server also answers on 169.254.169.254 (no DNS lookup of
 * metadata.google.internal) and marks every response Metadata-Flavor: Google. */
static bool from_google(const struct rt_cloud_response *r)
{
    struct curl_header *h;
    return r->ok && curl_easy_header(r->easy, "Metadata-Flavor", 0, CURLH_HEADER, -1, &h) == CURLHE_OK &&
           strcmp(h->value, "Google") == 0;
}

static void gcp(struct rt_cloud_run *run, struct rt_cloud_probe *p, const struct rt_cloud_response *r)
{
    static const char flavor[] = "Metadata-Flavor: Google";
    switch (p->step) {
    case 0:
        rt_cloud_get(run, p, 1, IMDS, "/computeMetadata/v1/instance/machine-type", flavor);
        return;
    case 1: /* projects/NUM/machineTypes/TYPE */
        if (!from_google(r)) {
            fail(p);
            return;
        }
        keep(p->info.instance_type, last_segment(r->body));
        rt_cloud_get(run, p, 2, IMDS, "/computeMetadata/v1/instance/zone", flavor);
        return;
    case 2: /* projects/NUM/zones/REGION-X */
        if (!from_google(r)) {
            fail(p);
            return;
        }
        keep(p->info.zone_id, last_segment(r->body));
        rt_strlcpy(p->info.region_id, p->info.zone_id, sizeof(p->info.region_id));
        char *dash = strrchr(p->info.region_id, '-');
        if (dash)
            *dash = '\0';
        found(p);
        return;
    }
}

static void azure(struct rt_cloud_run *run, struct rt_cloud_probe *p, const struct rt_cloud_response *r)
{
    if (p->step == 0) {
        rt_cloud_get(run, p, 1, IMDS, "/metadata/instance?api-version=2021-02-01", "Metadata: true");
        return;
    }
    struct json_object *o = body_json(r);
    struct json_object *compute = rt_json_get_object(o, "compute");
    if (compute) {
        keep_json(p->info.region_id, compute, "location");
        keep_json(p->info.zone_id, compute, "zone");
        keep_json(p->info.instance_type, compute, "vmSize");
        found(p);
    } else {
        fail(p);
    }
    json_object_put(o);
}

/* "key: value" lines (YAML); values may be quoted. */
static bool yaml_value(const char *text, const char *key, char *dst)
{
    size_t klen = strlen(key);
    for (const char *line = text; line; line = strchr(line, '\n')) {
        line += *line == '\n';
        line += strspn(line, " \t");
        if (strncmp(line, key, klen) != 0 || line[klen] != ':')
            continue;
        const char *v = line + klen + 1;
        v += strspn(v, " \t");
        size_t n = strcspn(v, "\r\n");
        while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
            n--;
        if (n >= 2 && (v[0] == '\'' || v[0] == '"') && v[n - 1] == v[0]) {
            v++;
            n -= 2;
        }
        char value[RT_CLOUD_STR];
        if (n >= sizeof(value))
            return true;
        memcpy(value, v, n);
        value[n] = '\0';
        keep(dst, value);
        return true;
    }
    return false;
}

/* The metadata has no server type: instance-id is an id, not a type. */
static void hetzner(struct rt_cloud_run *run, struct rt_cloud_probe *p, const struct rt_cloud_response *r)
{
    if (p->step == 0) {
        rt_cloud_get(run, p, 1, IMDS, "/hetzner/v1/metadata", NULL);
        return;
    }
    char id[RT_CLOUD_STR];
    if (!r->ok || !yaml_value(r->body, "instance-id", id)) {
        fail(p);
        return;
    }
    yaml_value(r->body, "region", p->info.region_id);
    yaml_value(r->body, "availability-zone", p->info.zone_id);
    found(p);
}

static void upcloud(struct rt_cloud_run *run, struct rt_cloud_probe *p, const struct rt_cloud_response *r)
{
    if (p->step == 0) {
        rt_cloud_get(run, p, 1, IMDS, "/metadata/v1.json", NULL);
        return;
    }
    struct json_object *o = body_json(r);
    const char *cloud = rt_json_get_string(o, "cloud_name");
    if (cloud && strcmp(cloud, "upcloud") == 0) {
        keep_json(p->info.region_id, o, "region");
        found(p);
    } else {
        fail(p);
    }
    json_object_put(o);
}

static bool has_value(struct json_object *o, const char *key)
{
    struct json_object *v;
    return json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v) && v;
}

static void vultr(struct rt_cloud_run *run, struct rt_cloud_probe *p, const struct rt_cloud_response *r)
{
    if (p->step == 0) {
        rt_cloud_get(run, p, 1, IMDS, "/v1.json", NULL);
        return;
    }
    struct json_object *o = body_json(r);
    if (has_value(o, "instanceid") || has_value(o, "instance-v2-id")) {
        keep_json(p->info.region_id, rt_json_get_object(o, "region"), "regioncode");
        found(p);
    } else {
        fail(p);
    }
    json_object_put(o);
}

/* Same scheme as AWS on Alibaba's own address, which nobody else uses. */
static void alicloud(struct rt_cloud_run *run, struct rt_cloud_probe *p, const struct rt_cloud_response *r)
{
    static const char token_header[] = "X-aliyun-ecs-metadata-token";
    switch (p->step) {
    case 0:
        rt_cloud_put(run, p, 1, ALICLOUD, "/latest/api/token",
                     "X-aliyun-ecs-metadata-token-ttl-seconds: 21600");
        return;
    case 1:
        if (keep_token(p, r)) {
            p->confirmed = true;
            token_get(run, p, 3, ALICLOUD, token_header, "/latest/meta-data/instance/instance-type");
        } else {
            rt_cloud_get(run, p, 2, ALICLOUD, "/latest/meta-data/", NULL);
        }
        return;
    case 2:
        if (!r->ok) {
            fail(p);
            return;
        }
        p->confirmed = true;
        token_get(run, p, 3, ALICLOUD, token_header, "/latest/meta-data/instance/instance-type");
        return;
    case 3:
        keep_body(p->info.instance_type, r);
        token_get(run, p, 4, ALICLOUD, token_header, "/latest/meta-data/region-id");
        return;
    case 4:
        keep_body(p->info.region_id, r);
        found(p);
        return;
    }
}

/* OpenStack metadata whose DNS service is OVH's resolver. */
static bool ovh_dns(struct json_object *network)
{
    struct json_object *services = rt_json_get_array(network, "services");
    size_t n = services ? json_object_array_length(services) : 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *s = json_object_array_get_idx(services, i);
        const char *type = rt_json_get_string(s, "type");
        const char *address = rt_json_get_string(s, "address");
        if (type && address && strcmp(type, "dns") == 0 && strcmp(address, "213.186.33.99") == 0)
            return true;
    }
    return false;
}

static void ovh(struct rt_cloud_run *run, struct rt_cloud_probe *p, const struct rt_cloud_response *r)
{
    struct json_object *o;
    switch (p->step) {
    case 0:
        rt_cloud_get(run, p, 1, IMDS, "/openstack/latest/network_data.json", NULL);
        return;
    case 1:
        o = body_json(r);
        p->confirmed = ovh_dns(o);
        json_object_put(o);
        if (p->confirmed)
            rt_cloud_get(run, p, 2, IMDS, "/openstack/latest/meta_data.json", NULL);
        else
            fail(p);
        return;
    case 2:
        o = body_json(r);
        keep_json(p->info.region_id, o, "availability_zone");
        if (strcmp(p->info.region_id, "nova") == 0) /* OpenStack's default, says nothing */
            p->info.region_id[0] = '\0';
        json_object_put(o);
        rt_cloud_get(run, p, 3, IMDS, "/latest/meta-data/instance-type", NULL);
        return;
    case 3:
        keep_body(p->info.instance_type, r);
        found(p);
        return;
    }
}

void rt_cloud_vendor_step(struct rt_cloud_run *run, struct rt_cloud_probe *p,
                          const struct rt_cloud_response *r)
{
    static void (*const steps[RT_CLOUD_VENDORS])(struct rt_cloud_run *, struct rt_cloud_probe *,
                                                 const struct rt_cloud_response *) = {
        aws, gcp, azure, hetzner, upcloud, vultr, alicloud, ovh,
    };
    static const struct rt_cloud_response none = {.body = ""};
    if (!r) {
        p->step = 0;
        r = &none;
    }
    steps[p->vendor](run, p, r);
}
