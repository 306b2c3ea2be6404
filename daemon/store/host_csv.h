/* The CSV values of a stored host sample (rt_csv_host) straight from its
 * numbers, without making and parsing its JSON: a template is read once
 * with each number replaced by a stand-in naming its column, which tells
 * where every CSV value comes from. */
#ifndef RT_STORE_HOST_CSV_H
#define RT_STORE_HOST_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_csv_map {
    size_t n;                       /* CSV values */
    int32_t *col;                   /* per value: its column, or -1 for konst */
    double *konst;
    bool *dec;                      /* per column: a decimal (x 10^6) rather than an integer */
    size_t ncols;
};

/* false when the template is not a host sample. */
bool rt_csv_map_build(const uint8_t *tmpl, size_t tlen, struct rt_csv_map *m);
/* The values of one record (out holds m->n). */
void rt_csv_map_values(const struct rt_csv_map *m, const int64_t *nums, double *out);
/* Whether the map gives what parsing the record's JSON gives (checked once
 * per template before it is trusted). */
bool rt_csv_map_check(const struct rt_csv_map *m, const uint8_t *tmpl, size_t tlen, const int64_t *nums, size_t n);
void rt_csv_map_free(struct rt_csv_map *m);

/* For sealing host blocks: the columns CSV rows need (rt_csv_cols_fn). */
void rt_host_csv_cols(const uint8_t *tmpl, size_t tlen, size_t ncols, uint8_t *flags);

#endif
