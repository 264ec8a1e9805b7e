/*
 * The lines of a text: the one walk over a text line by line (a tool's output, an env file, a
 * unit read back, a log), with the line ends the callers meet (LF, and CR LF when asked) and a
 * bound on a line's length that stops the walk where it is passed.
 *
 * It does not copy or NUL-terminate a line, read from a file or a stream, or know systemd's
 * own line ends (a CR alone ends a line there: unit/scan reads those).
 */
#include <slipway/core.h>

#include <string.h>

void sw_lines_init(struct sw_lines *it, const char *text, size_t len, size_t max, unsigned flags)
{
    it->p = text;
    it->end = text ? text + len : text;
    it->max = max;
    it->flags = flags;
    it->no = 0;
    it->over = false;
}

bool sw_lines_next(struct sw_lines *it, struct sw_line *out)
{
    if (it->over || !it->p || it->p >= it->end)
        return false;
    const char *s = it->p;
    const char *nl = memchr(s, '\n', (size_t)(it->end - s));
    const char *le = nl ? nl : it->end;
    it->no++;
    if ((it->flags & SW_LINES_CRLF) && le > s && le[-1] == '\r')
        le--;
    out->s = s;
    out->len = (size_t)(le - s);
    out->lf = nl != NULL;
    if (out->len > it->max) {
        it->over = true;
        return false;
    }
    it->p = nl ? nl + 1 : it->end;
    return true;
}
