/* Sentinel request bodies and replies, S3 keys, URLs and region discovery:
 * the wire format of rust-port.md §4 and the 422-causing mistakes it lists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "upload/http.h"
#include "rt/json.h"
#include "upload/s3.h"
#include "upload/sentinel.h"

static void test_runs_body(void **state)
{
    (void)state;
    struct json_object *f = json_tokener_parse(
        "{\"pid\":42,\"host_vcpus\":8,\"job_name\":\"train\",\"cloud_vendor_id\":\"aws\","
        "\"command\":[\"python3\",\"burn.py\",\"--n\",\"1\"],\"tags\":{\"team\":\"ml\",\"n\":3},"
        "\"project_name\":null,\"typo_name\":\"x\",\"team\":\"core\"}");
    unsigned dropped = 0;
    struct json_object *b = rt_sentinel_runs_body(f, &dropped);
    assert_string_equal(rt_json_plain(b),
        "{\"job_name\":\"train\",\"team\":\"core\",\"tags\":{\"team\":\"ml\",\"n\":\"3\"},"
        "\"command\":\"[\\\"python3\\\",\\\"burn.py\\\",\\\"--n\\\",\\\"1\\\"]\","
        "\"host_id\":null,\"host_hostname\":null,\"host_ip\":null,\"host_server_allocation\":null,"
        "\"host_vcpus\":8,\"host_cpu_model\":null,\"host_memory_mib\":null,\"host_gpu_model\":null,"
        "\"host_gpu_count\":null,\"host_gpu_memory_mib\":null,\"host_storage_gb\":null,"
        "\"cloud_vendor_id\":\"aws\",\"cloud_account_id\":null,\"cloud_region_id\":null,"
        "\"cloud_zone_id\":null,\"cloud_instance_type\":null}");
    assert_int_equal(dropped, 2); /* pid, typo_name */
    json_object_put(b);
    json_object_put(f);

    /* command already a JSON-array string stays; a plain string is wrapped;
     * tags as "k=v" strings (the ctl's) become an object, split at the
     * first '=', a later key winning. */
    f = json_tokener_parse("{\"command\":\"[\\\"ls\\\"]\",\"tags\":[\"a=b\",7,\"u=x=y\",\"a=c\",\"flag\"]}");
    b = rt_sentinel_runs_body(f, NULL);
    assert_string_equal(rt_json_get_string(b, "command"), "[\"ls\"]");
    assert_string_equal(rt_json_plain(rt_json_get_object(b, "tags")), "{\"a\":\"c\",\"u\":\"x=y\",\"flag\":\"\"}");
    json_object_put(b);
    json_object_put(f);
    f = json_tokener_parse("{\"command\":\"make all\",\"tags\":[]}");
    b = rt_sentinel_runs_body(f, NULL);
    assert_string_equal(rt_json_get_string(b, "command"), "[\"make all\"]");
    assert_false(json_object_object_get_ex(b, "tags", NULL));
    json_object_put(b);
    json_object_put(f);

    /* NULL or non-object fields: host and cloud keys only, all null. */
    b = rt_sentinel_runs_body(NULL, NULL);
    assert_int_equal(json_object_object_length(b), 16);
    json_object_put(b);
}

/* Which fields a 4xx to POST /runs refused: FastAPI's loc, else named words. */
static void test_refused_fields(void **state)
{
    (void)state;
    struct json_object *sent = json_tokener_parse("{\"job_name\":\"t\",\"tags\":{\"a\":\"b\"},\"host_id\":null}");
    struct json_object *names = json_object_new_array();
    const char *fastapi = "{\"detail\":[{\"type\":\"list_type\",\"loc\":[\"body\",\"tags\"],\"msg\":\"Input "
                          "should be a valid list\"},{\"loc\":[\"body\",\"unsent\"]},{\"loc\":[\"query\",\"job_name\"]}]}";
    assert_int_equal(rt_sentinel_refused_fields(fastapi, sent, names), 1);
    assert_string_equal(rt_json_plain(names), "[\"tags\"]");
    json_object_put(names);
    names = json_object_new_array();
    assert_int_equal(rt_sentinel_refused_fields("{\"detail\":\"job_name: too long\"}", sent, names), 1);
    assert_string_equal(rt_json_plain(names), "[\"job_name\"]");
    json_object_put(names);
    names = json_object_new_array();
    /* Words only: "job_names" or "hostname" name none of them. */
    assert_int_equal(rt_sentinel_refused_fields("bad job_names, host_ids", sent, names), 0);
    assert_int_equal(rt_sentinel_refused_fields(NULL, sent, names), 0);
    assert_int_equal(json_object_array_length(names), 0);
    json_object_put(names);
    json_object_put(sent);
}

/* A refused /finish costs only the objects it names: by their index in
 * data_uris, or their key in a msg or a string detail; never from "input"
 * (which echoes the body), nor from a text naming them all. */
static void test_refused_uris(void **state)
{
    (void)state;
    const char *uris[] = {"s3://b/p/r/000000.csv.gz", "s3://b/p/r/000001.csv.gz", "s3://b/p/r/000002.csv.gz"};
    bool bad[3] = {0};
    const char *by_index = "{\"detail\":[{\"loc\":[\"body\",\"data_uris\",1],\"msg\":\"not a CSV\","
                           "\"input\":\"s3://b/p/r/000001.csv.gz\"},{\"loc\":[\"body\",\"data_uris\",7]}]}";
    assert_int_equal(rt_sentinel_refused_uris(by_index, uris, 3, bad), 1);
    assert_true(!bad[0] && bad[1] && !bad[2]);
    memset(bad, 0, sizeof(bad));
    const char *by_msg = "{\"detail\":[{\"loc\":[\"body\"],\"msg\":\"p/r/000002.csv.gz is empty\","
                         "\"input\":{\"data_uris\":[\"s3://b/p/r/000000.csv.gz\"]}}]}";
    assert_int_equal(rt_sentinel_refused_uris(by_msg, uris, 3, bad), 1);
    assert_true(!bad[0] && !bad[1] && bad[2]);
    memset(bad, 0, sizeof(bad));
    assert_int_equal(rt_sentinel_refused_uris("{\"detail\":\"s3://b/p/r/000000.csv.gz: no such object\"}", uris, 3,
                                              bad), 1);
    assert_true(bad[0] && !bad[1] && !bad[2]);
    memset(bad, 0, sizeof(bad));
    /* An echo of the whole list, a body-level error, no body: nothing. */
    assert_int_equal(rt_sentinel_refused_uris("{\"detail\":\"bad: p/r/000000.csv.gz p/r/000001.csv.gz "
                                              "p/r/000002.csv.gz\"}", uris, 3, bad), 0);
    assert_int_equal(rt_sentinel_refused_uris("{\"detail\":[{\"loc\":[\"body\",\"exit_code\"],\"input\":"
                                              "\"p/r/000001.csv.gz\"}]}", uris, 3, bad), 0);
    assert_int_equal(rt_sentinel_refused_uris("p/r/000001.csv.gz", uris, 3, bad), 0); /* not JSON */
    assert_int_equal(rt_sentinel_refused_uris(NULL, uris, 3, bad), 0);
    assert_true(!bad[0] && !bad[1] && !bad[2]);
}

static void test_finish_body(void **state)
{
    (void)state;
    const char *uris[] = {"s3://b/p/r/000000.csv.gz", "s3://b/p/r/000001.csv.gz"};
    struct json_object *b = rt_sentinel_finish_body(0, "2026-04-10T12:00:00Z", uris, 2, NULL);
    assert_string_equal(rt_json_plain(b),
        "{\"exit_code\":0,\"run_status\":\"finished\",\"finished_at\":\"2026-04-10T12:00:00Z\","
        "\"data_source\":\"s3\",\"data_uris\":[\"s3://b/p/r/000000.csv.gz\",\"s3://b/p/r/000001.csv.gz\"]}");
    json_object_put(b);
    b = rt_sentinel_finish_body(137, "2026-04-10T12:00:00Z", NULL, 0, "h\n1\n");
    assert_string_equal(rt_json_plain(b),
        "{\"exit_code\":137,\"run_status\":\"failed\",\"finished_at\":\"2026-04-10T12:00:00Z\","
        "\"data_source\":\"inline\",\"data_csv\":\"h\\n1\\n\"}");
    json_object_put(b);
}

static void test_iso8601(void **state)
{
    (void)state;
    int64_t t;
    assert_true(rt_parse_iso8601("2026-04-10T12:00:00Z", &t));
    assert_int_equal(t, 1775822400);
    assert_true(rt_parse_iso8601("2026-04-10T12:00:00+00:00", &t));
    assert_int_equal(t, 1775822400);
    assert_true(rt_parse_iso8601("2026-04-10T14:00:00.123+02:00", &t));
    assert_int_equal(t, 1775822400);
    assert_false(rt_parse_iso8601("2026-04-10 12:00:00Z", &t));
    assert_false(rt_parse_iso8601("2026-04-10T12:00:00", &t));
    assert_false(rt_parse_iso8601("2026-13-10T12:00:00Z", &t));
    assert_false(rt_parse_iso8601("garbage", &t));
    char buf[32];
    rt_format_iso8601(1775822400, buf);
    assert_string_equal(buf, "2026-04-10T12:00:00Z");
}

static void test_parse_replies(void **state)
{
    (void)state;
    struct rt_sentinel_run run;
    assert_int_equal(rt_sentinel_parse_run(
        "{\"run_id\":\"r-1\",\"upload_uri_prefix\":\"s3://bkt/pre\",\"upload_credentials\":"
        "{\"access_key\":\"AK\",\"secret_key\":\"SK\",\"session_token\":\"ST\",\"expiration\":\"2026-04-10T12:00:00Z\"}}",
        &run), 0);
    assert_string_equal(run.run_id, "r-1");
    assert_string_equal(run.upload_uri_prefix, "s3://bkt/pre");
    assert_true(run.has_creds);
    assert_string_equal(run.creds.session_token, "ST");
    assert_int_equal(run.creds.expires_at, 1775822400);
    rt_sentinel_run_free(&run);

    /* expires_at alias; a missing expiry means none; garbage means unknown (0). */
    struct rt_s3_creds c;
    assert_int_equal(rt_sentinel_parse_refresh(
        "{\"upload_credentials\":{\"access_key\":\"A\",\"secret_key\":\"S\",\"expires_at\":\"2026-04-10T12:00:00+00:00\"}}",
        &c), 0);
    assert_int_equal(c.expires_at, 1775822400);
    assert_null(c.session_token);
    rt_s3_creds_free(&c);
    assert_int_equal(rt_sentinel_parse_refresh("{\"upload_credentials\":{\"access_key\":\"A\",\"secret_key\":\"S\"}}", &c), 0);
    assert_int_equal(c.expires_at, RT_SENTINEL_NO_EXPIRY);
    rt_s3_creds_free(&c);
    assert_int_equal(rt_sentinel_parse_refresh(
        "{\"upload_credentials\":{\"access_key\":\"A\",\"secret_key\":\"S\",\"expiration\":\"soon\"}}", &c), 0);
    assert_int_equal(c.expires_at, 0);
    rt_s3_creds_free(&c);

    /* Bad replies fail without crashing. */
    assert_int_equal(rt_sentinel_parse_run(NULL, &run), -EBADMSG);
    assert_int_equal(rt_sentinel_parse_run("not json", &run), -EBADMSG);
    assert_int_equal(rt_sentinel_parse_run("[1,2]", &run), -EBADMSG);
    assert_int_equal(rt_sentinel_parse_run("{\"run_id\":\"\"}", &run), -EBADMSG);
    assert_int_equal(rt_sentinel_parse_run("{\"run_id\":17}", &run), 0); /* numeric ids are kept as text */
    assert_string_equal(run.run_id, "17");
    assert_false(run.has_creds);
    assert_null(run.upload_uri_prefix);
    rt_sentinel_run_free(&run);
    assert_int_equal(rt_sentinel_parse_refresh("{\"upload_credentials\":{\"access_key\":\"A\"}}", &c), -EBADMSG);
    assert_int_equal(rt_sentinel_parse_refresh("{}", &c), -EBADMSG);

    char *p = rt_sentinel_run_path("run:1/x", "finish");
    assert_string_equal(p, "/runs/run%3A1%2Fx/finish");
    free(p);
}

static void test_s3_names(void **state)
{
    (void)state;
    char *b, *p;
    assert_int_equal(rt_s3_parse_uri("s3://my-bucket/a/b//", &b, &p), 0);
    assert_string_equal(b, "my-bucket");
    assert_string_equal(p, "a/b");
    char *key = rt_s3_object_key(p, "run-1", 7);
    assert_string_equal(key, "a/b/run-1/000007.csv.gz");
    free(key);
    free(b);
    free(p);
    assert_int_equal(rt_s3_parse_uri("s3://bkt", &b, &p), 0);
    key = rt_s3_object_key(p, "r", 1234567);
    assert_string_equal(key, "r/1234567.csv.gz");
    free(key);
    free(b);
    free(p);
    assert_int_equal(rt_s3_parse_uri("https://bkt/p", &b, &p), -EINVAL);
    assert_int_equal(rt_s3_parse_uri("s3://", &b, &p), -EINVAL);
    assert_int_equal(rt_s3_parse_uri("s3://ab/p", &b, &p), -EINVAL);      /* too short */
    assert_int_equal(rt_s3_parse_uri("s3://Bad_Bucket/p", &b, &p), -EINVAL);
    assert_int_equal(rt_s3_parse_uri("s3://evil.com@x/p", &b, &p), -EINVAL);
    assert_int_equal(rt_s3_parse_uri(NULL, &b, &p), -EINVAL);

    char *enc = rt_s3_encode_path("date=2026-11-22/t01:02/a b+c~_.-/ü");
    assert_string_equal(enc, "date%3D2026-11-22/t01%3A02/a%20b%2Bc~_.-/%C3%BC");
    free(enc);

    char *url = rt_s3_object_url(NULL, "eu-west-1", "bkt", "p=1/r/000000.csv.gz");
    assert_string_equal(url, "https://bkt.s3.eu-west-1.amazonaws.com/p%3D1/r/000000.csv.gz");
    free(url);
    url = rt_s3_object_url(NULL, "eu-west-1", "my.bkt", "k");
    assert_string_equal(url, "https://s3.eu-west-1.amazonaws.com/my.bkt/k");
    free(url);
    url = rt_s3_object_url("http://127.0.0.1:7480/", "us-east-1", "bkt", "a:b");
    assert_string_equal(url, "http://127.0.0.1:7480/bkt/a%3Ab");
    free(url);
}

static void test_region_header(void **state)
{
    (void)state;
    char r[64] = "";
    const char *h = "X-Amz-Bucket-Region: eu-west-3\r\n";
    assert_int_equal(rt_http_parse_region_header(h, strlen(h), r, sizeof(r)), 1);
    assert_string_equal(r, "eu-west-3");
    h = "x-amz-bucket-region:us-east-1";
    assert_int_equal(rt_http_parse_region_header(h, strlen(h), r, sizeof(r)), 1);
    assert_string_equal(r, "us-east-1");
    h = "x-amz-bucket-region: eu west\r\n";
    assert_int_equal(rt_http_parse_region_header(h, strlen(h), r, sizeof(r)), 0);
    h = "x-amz-request-id: 1\r\n";
    assert_int_equal(rt_http_parse_region_header(h, strlen(h), r, sizeof(r)), 0);
}

/* A one-shot HTTP server answering like S3 does for a bucket elsewhere. */
static void *serve_once(void *arg)
{
    int ls = *(int *)arg;
    int c = accept(ls, NULL, NULL);
    if (c >= 0) {
        char buf[2048];
        ssize_t n = read(c, buf, sizeof(buf));
        (void)n;
        static const char reply[] = "HTTP/1.1 301 Moved Permanently\r\nx-amz-bucket-region: ap-south-1\r\n"
                                    "Content-Length: 0\r\nConnection: close\r\n\r\n";
        n = write(c, reply, sizeof(reply) - 1);
        close(c);
    }
    return NULL;
}

static void test_region_probe(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct rt_http h;
    assert_int_equal(rt_http_init(&h, 2000, 2000, NULL), 0);
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    assert_int_equal(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(ls, 1), 0);
    getsockname(ls, (struct sockaddr *)&a, &al);
    pthread_t t;
    pthread_create(&t, NULL, serve_once, &ls);
    char url[64], region[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", ntohs(a.sin_port));
    rt_s3_discover_region(&h, url, region, sizeof(region));
    pthread_join(t, NULL);
    assert_string_equal(region, "ap-south-1");
    /* Nobody listening now: the documented fallback. */
    close(ls);
    rt_s3_discover_region(&h, url, region, sizeof(region));
    assert_string_equal(region, RT_S3_FALLBACK_REGION);
    rt_http_cleanup(&h);
    curl_global_cleanup();
}

/* Answers one request with a 200 and a body of n bytes, in pieces. */
struct big_reply {
    int ls;
    size_t n;
};

static void *serve_big(void *arg)
{
    struct big_reply *b = arg;
    int c = accept(b->ls, NULL, NULL);
    if (c >= 0) {
        char buf[4096];
        ssize_t n = read(c, buf, sizeof(buf));
        n = snprintf(buf, sizeof(buf), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", b->n);
        n = write(c, buf, (size_t)n);
        memset(buf, 'k', sizeof(buf));
        for (size_t left = b->n; left > 0;) {
            size_t k = left < 1500 ? left : 1500;
            n = write(c, buf, k);
            left -= k;
            usleep(2000);
        }
        (void)n;
        close(c);
    }
    return NULL;
}

/* A reply body (credentials) grows through fresh buffers, not realloc, and
 * comes back whole; freeing resets it. */
static void test_reply_body(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct rt_http h;
    assert_int_equal(rt_http_init(&h, 2000, 5000, NULL), 0);
    struct big_reply b = {socket(AF_INET, SOCK_STREAM, 0), 6000};
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    assert_int_equal(bind(b.ls, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(b.ls, 1), 0);
    getsockname(b.ls, (struct sockaddr *)&a, &al);
    pthread_t t;
    pthread_create(&t, NULL, serve_big, &b);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(a.sin_port));
    struct rt_http_resp resp;
    assert_int_equal(rt_sentinel_post(&h, url, "/runs", "tok", "{}", &resp), 0);
    pthread_join(t, NULL);
    close(b.ls);
    assert_int_equal(resp.status, 200);
    assert_int_equal(resp.len, 6000);
    assert_true(resp.cap > resp.len);
    assert_int_equal(strspn(resp.body, "k"), 6000);
    rt_http_resp_free(&resp);
    assert_null(resp.body);
    assert_int_equal(resp.len + resp.cap, 0);
    rt_http_cleanup(&h);
    curl_global_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_body),     cmocka_unit_test(test_finish_body),
        cmocka_unit_test(test_refused_fields), cmocka_unit_test(test_refused_uris),
        cmocka_unit_test(test_iso8601),       cmocka_unit_test(test_parse_replies),
        cmocka_unit_test(test_s3_names),      cmocka_unit_test(test_region_header),
        cmocka_unit_test(test_region_probe),  cmocka_unit_test(test_reply_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
