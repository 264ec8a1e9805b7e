/*
 * readings/load: a tool's output read from where a person put it, a file or standard input
 * ("-"), at most SW_READINGS_MAX_LOG bytes, then parsed (sw_readings_parse) with the source
 * named in its errors ("<stdin>" for standard input).
 *
 * What it does not do: run the tool (host/ and deploy/ do that on a host), or read more than the
 * ceiling (a larger input is refused, not cut).
 */
#include <slipway/readings.h>

#include <stdio.h>
#include <string.h>

/* Standard input into *text (sw_free it), refused past SW_READINGS_MAX_LOG. */
static int read_stdin(char **text, size_t *len, struct sw_err *e)
{
    struct sw_buf b;
    char chunk[65536];
    size_t n;
    int rc = 0;
    sw_buf_init(&b, SW_READINGS_MAX_LOG);
    while (!rc && (n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
        rc = sw_buf_append(&b, chunk, n);
    if (rc) {
        sw_buf_free(&b);
        return sw_err_set(e, rc == SW_ENOMEM ? rc : SW_EINVAL, "<stdin>: larger than %u MiB",
                          SW_READINGS_MAX_LOG >> 20);
    }
    *len = b.len;
    *text = sw_buf_steal(&b);
    return 0;
}

int sw_readings_load(enum sw_readings_tool tool, const char *path, struct sw_readings *out,
                     struct sw_err *e)
{
    char *text = NULL;
    size_t len = 0;
    bool in = !strcmp(path, "-");
    memset(out, 0, sizeof(*out));
    int rc =
        in ? read_stdin(&text, &len, e) : sw_read_file(path, SW_READINGS_MAX_LOG, &text, &len, e);
    if (!rc)
        rc = sw_readings_parse(tool, text, len, in ? "<stdin>" : path, out, e);
    sw_free(text);
    return rc;
}
