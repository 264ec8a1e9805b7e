/*
 * Fuzz the unit parsers (bytes, counts, durations): any string must parse or fail cleanly.
 */
#include <slipway/core.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    uint64_t v;
    struct sw_err e;
    sw_parse_bytes(s, &v, &e);
    sw_parse_count(s, &v, &e);
    int64_t ms;
    sw_parse_duration_ms(s, &ms, &e);
    char out[128];
    sw_sniff(data, size, out, sizeof(out));
    free(s);
    return 0;
}
