/*
 * deploy/devices: device memory on an endpoint's host, read by the vendor tool the host has
 * (nvidia-smi, rocm-smi, amd-smi, as sw_host_facts finds them) and parsed by readings. One
 * function for both `install` (which records the readings in the ledger once the endpoint serves)
 * and `status` (which shows them).
 */
#include "service_internal.h"

#include <slipway/readings.h>

#include <stdio.h>
#include <string.h>

int sw__svc_devices(struct sw_host *h, const char *where, int64_t deadline_ms,
                    struct sw_readings *rs, char *tool, size_t tn, char *note, size_t nn)
{
    struct sw_host_facts facts;
    struct sw_host_result hr;
    struct sw_err e;
    uint64_t t0 = sw_now_ns();
    int rc;

    memset(rs, 0, sizeof(*rs));
    memset(&facts, 0, sizeof(facts));
    memset(&hr, 0, sizeof(hr));
    sw_err_clear(&e);
    snprintf(tool, tn, "%s", "");
    snprintf(note, nn, "%s", "");
    rc = sw_host_facts(h, NULL, 0, deadline_ms, &facts, &e);
    if (rc) {
        snprintf(note, nn, "%s", e.msg);
        return rc;
    }
    static const char *const nv[] = {
        "nvidia-smi", "--query-gpu=index,uuid,name,memory.used,memory.total,memory.free",
        "--format=csv", NULL};
    static const char *const rocm[] = {"rocm-smi", "--showmeminfo", "vram", "--json", NULL};
    static const char *const amd[] = {"amd-smi", "metric", "--mem-usage", "--json", NULL};
    const char *const *argv = facts.nvidia_smi ? nv
                              : facts.rocm_smi ? rocm
                              : facts.amd_smi  ? amd
                                               : NULL;
    enum sw_readings_tool t = facts.nvidia_smi ? SW_READINGS_NVIDIA_SMI
                              : facts.rocm_smi ? SW_READINGS_ROCM_SMI
                                               : SW_READINGS_AMD_SMI;
    sw_host_facts_free(&facts);
    if (!argv) {
        snprintf(note, nn, "%s", "no device tool on this host");
        return 0;
    }
    snprintf(tool, tn, "%s", argv[0]);
    struct sw_host_run_opts ro = {.deadline_ms = sw__svc_left_ms(t0, deadline_ms),
                                  .max_out = 1u << 20};
    rc = sw_host_run(h, argv, &ro, &hr, &e);
    if (!rc)
        rc = sw_readings_parse(t, hr.out ? hr.out : "", hr.out_len, where, rs, &e);
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
