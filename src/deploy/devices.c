/*
 * deploy/devices: device memory on an endpoint's host, read by the vendor tool the host has
 * (nvidia-smi, rocm-smi, amd-smi, as sw_host_facts finds them) and parsed by readings. One
 * function for both `install` (which records the readings in the ledger once the endpoint serves)
 * and `status` (which shows them).
 */
#include "service_internal.h"

#include <slipway/readings.h>
#include <slipway/core.h>

#include <stdio.h>
#include <string.h>

/* One shell on the host finds the first vendor tool (the order sw_host_facts reports them and
 * the choice it made: nvidia-smi, rocm-smi, amd-smi), says which on a line of its own and runs
 * it in its place: one command per reading. It used to run the whole facts script first (15
 * programs, podman's and docker's --version among them), which was most of what a watch look
 * cost on the looks that read devices (bench_watch). */
static const char devices_script[] =
    "for t in nvidia-smi rocm-smi amd-smi; do\n"
    "  command -v \"$t\" >/dev/null 2>&1 || continue\n"
    "  echo \"@tool $t\"\n"
    "  case $t in\n"
    "  nvidia-smi) exec nvidia-smi "
    "--query-gpu=index,uuid,name,memory.used,memory.total,memory.free --format=csv ;;\n"
    "  rocm-smi) exec rocm-smi --showmeminfo vram --json ;;\n"
    "  *) exec amd-smi metric --mem-usage --json ;;\n"
    "  esac\n"
    "done\n"
    "echo '@tool none'\n";

/* The "@tool NAME" line in out (lines before it are a login's noise); what follows it in *rest. */
static int tool_line(const char *out, size_t len, char *tool, size_t tn, const char **rest,
                     size_t *rest_len)
{
    struct sw_lines it;
    struct sw_line ln;
    sw_lines_init(&it, out, len, 4096, 0);
    while (sw_lines_next(&it, &ln)) {
        if (ln.len > 6 && !memcmp(ln.s, "@tool ", 6)) {
            snprintf(tool, tn, "%.*s", (int)(ln.len - 6), ln.s + 6);
            *rest = ln.s + ln.len + (ln.lf ? 1 : 0);
            *rest_len = len - (size_t)(*rest - out);
            return 0;
        }
    }
    return -1;
}

int sw__svc_devices(struct sw_host *h, const char *where, int64_t deadline_ms,
                    struct sw_readings *rs, char *tool, size_t tn, char *note, size_t nn)
{
    struct sw_host_result hr;
    struct sw_err e;
    const char *rest = NULL;
    size_t rest_len = 0;
    int rc;

    memset(rs, 0, sizeof(*rs));
    memset(&hr, 0, sizeof(hr));
    sw_err_clear(&e);
    snprintf(tool, tn, "%s", "");
    snprintf(note, nn, "%s", "");
    const char *argv[] = {"sh", "-c", devices_script, NULL};
    struct sw_host_run_opts ro = {.deadline_ms = deadline_ms, .max_out = 1u << 20};
    rc = sw_host_run(h, argv, &ro, &hr, &e);
    char found[32] = "";
    if (tool_line(hr.out ? hr.out : "", hr.out_len, found, sizeof(found), &rest, &rest_len)) {
        if (!rc)
            rc = sw_err_set(&e, SW_EPARSE, "%s: the device tool's search said no '@tool' line",
                            where);
    } else if (!strcmp(found, "none")) {
        snprintf(note, nn, "%s", rc ? e.msg : "no device tool on this host");
        sw_host_result_free(&hr);
        return rc;
    } else {
        snprintf(tool, tn, "%s", found);
    }
    enum sw_readings_tool t = !strcmp(found, "nvidia-smi") ? SW_READINGS_NVIDIA_SMI
                              : !strcmp(found, "rocm-smi") ? SW_READINGS_ROCM_SMI
                                                           : SW_READINGS_AMD_SMI;
    if (!rc)
        rc = sw_readings_parse(t, rest, rest_len, where, rs, &e);
    if (rc)
        snprintf(note, nn, "%s", e.msg);
    sw_host_result_free(&hr);
    return rc;
}

int sw_service_devices(struct sw_host *h, const char *where, int64_t deadline_ms,
                       struct sw_readings *rs, char *tool, size_t tn, char *note, size_t nn)
{
    return sw__svc_devices(h, where, deadline_ms, rs, tool, tn, note, nn);
}
