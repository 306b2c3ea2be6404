/* Runs a fuzz target's inputs once each, without libFuzzer: the corpus under
 * tests/fuzz/corpus/TARGET (seeds and the inputs of crashes found) replayed
 * by ctest in every build.
 *   replay_TARGET FILE|DIR... */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf)
        return -1;
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files of a directory in name order, so a failure is reproducible. */
static int run_dir(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.') {
            names = realloc(names, (n + 1) * sizeof(*names));
            names[n++] = strdup(de->d_name);
        }
    closedir(d);
    qsort(names, n, sizeof(*names), cmp);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        if (rc == 0 && run_file(path) < 0)
            rc = -1;
        (*count)++;
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    int count = 0, rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
            rc = run_dir(argv[i], &count);
        else if ((rc = run_file(argv[i])) == 0)
            count++;
    }
    printf("%d inputs replayed\n", count);
    return rc ? 1 : 0;
}
