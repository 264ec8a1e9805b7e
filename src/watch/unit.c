/*
 * watch/unit: the systemd unit that runs `slipway watch` on the control machine (`slipway render
 * --watch`): Restart=always (watch resumes from the ledger, so a restart costs one look), the
 * fleet and ledger named by absolute path, and a small footprint (no new privileges, its own
 * private /tmp). A system unit: `install --watch` or the operator copies it to
 * /etc/systemd/system/slipway-watch.service.
 *
 * What it deliberately does not do: install itself, or hold secrets (the fleet names where the
 * API keys are; watch reads them there).
 */
#include "watch_internal.h"

#include <string.h>

/* A word as systemd's ExecStart= reads it: quoted when it holds a space, a quote or a '\'. */
static int word(struct sw_buf *b, const char *s)
{
    if (!strpbrk(s, " \t\"'\\$%;"))
        return sw_buf_puts(b, s);
    int rc = sw_buf_putc(b, '"');
    for (; !rc && *s; s++) {
        if (*s == '"' || *s == '\\')
            rc = sw_buf_putc(b, '\\');
        if (!rc && *s == '%')
            rc = sw_buf_putc(b, '%');
        if (!rc && *s == '$')
            rc = sw_buf_putc(b, '$');
        if (!rc)
            rc = sw_buf_putc(b, *s);
    }
    return rc ? rc : sw_buf_putc(b, '"');
}

int sw_watch_unit_render(const char *exe, const char *fleet_path, const char *ledger_path,
                         const char *metrics_addr, struct sw_buf *out, struct sw_err *e)
{
    if (!exe || exe[0] != '/' || !fleet_path || fleet_path[0] != '/' ||
        (ledger_path && ledger_path[0] != '/'))
        return sw_err_set(e, SW_EINVAL,
                          "render --watch: slipway, the fleet and the ledger need absolute paths "
                          "(got %s, %s, %s)",
                          exe ? exe : "?", fleet_path ? fleet_path : "?",
                          ledger_path ? ledger_path : "-");
    /* a line break in a value would end the ExecStart line and start a key of its own */
    const char *vals[] = {exe, fleet_path, ledger_path, metrics_addr};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
        if (vals[i] && strpbrk(vals[i], "\r\n"))
            return sw_err_set(e, SW_EINVAL,
                              "render --watch: a line break in \"%.*s...\": a unit line cannot "
                              "hold it",
                              (int)strcspn(vals[i], "\r\n"), vals[i]);
    int rc = sw_buf_puts(out, "# Rendered by slipway render --watch: the fleet's supervisor.\n"
                              "[Unit]\n"
                              "Description=slipway watch: keep the fleet serving\n"
                              "Wants=network-online.target\n"
                              "After=network-online.target\n"
                              "\n"
                              "[Service]\n"
                              "Type=exec\n"
                              "ExecStart=");
    if (!rc)
        rc = word(out, exe);
    if (!rc)
        rc = sw_buf_puts(out, " watch --fleet ");
    if (!rc)
        rc = word(out, fleet_path);
    if (!rc && ledger_path) {
        rc = sw_buf_puts(out, " --ledger ");
        if (!rc)
            rc = word(out, ledger_path);
    }
    if (!rc && metrics_addr) {
        rc = sw_buf_puts(out, " --metrics ");
        if (!rc)
            rc = word(out, metrics_addr);
    }
    if (!rc)
        rc = sw_buf_puts(out, "\n"
                              "Restart=always\n"
                              "RestartSec=5\n"
                              "KillMode=mixed\n"
                              "TimeoutStopSec=30\n"
                              "NoNewPrivileges=yes\n"
                              "PrivateTmp=yes\n"
                              "\n"
                              "[Install]\n"
                              "WantedBy=multi-user.target\n");
    if (rc)
        return sw_err_set(e, rc, "render --watch: the unit does not fit its buffer");
    return 0;
}
