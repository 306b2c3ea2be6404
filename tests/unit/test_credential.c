/* Reading systemd credentials the way the unit passes them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "system/credential.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/rt-cred-test.XXXXXX";

static void put(const char *name, const char *content)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
}

static void test_credentials(void **state)
{
    (void)state;
    char buf[16];
    unsetenv("CREDENTIALS_DIRECTORY");
    assert_int_equal(rt_credential_read("sentinel-token", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "");

    setenv("CREDENTIALS_DIRECTORY", dir, 1);
    assert_int_equal(rt_credential_read("sentinel-token", buf, sizeof(buf)), 0);

    /* SetCredential=sentinel-token:\n, the fallback for a missing file. */
    put("sentinel-token", "\n");
    assert_int_equal(rt_credential_read("sentinel-token", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "");

    put("sentinel-token", "  st_abc123\n");
    assert_int_equal(rt_credential_read("sentinel-token", buf, sizeof(buf)), 9);
    assert_string_equal(buf, "st_abc123");

    put("sentinel-token", "0123456789abcde"); /* 15 bytes + NUL fit exactly */
    assert_int_equal(rt_credential_read("sentinel-token", buf, sizeof(buf)), 15);
    put("sentinel-token", "0123456789abcdef");
    assert_int_equal(rt_credential_read("sentinel-token", buf, sizeof(buf)), -E2BIG);
    assert_string_equal(buf, "");

    assert_int_equal(rt_credential_read("../sentinel-token", buf, sizeof(buf)), -EINVAL);
    assert_int_equal(rt_credential_read("", buf, sizeof(buf)), -EINVAL);
    char path[300];
    snprintf(path, sizeof(path), "%s/sentinel-token", dir);
    unlink(path);
    unsetenv("CREDENTIALS_DIRECTORY");
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_credentials)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(dir);
    return rc;
}
