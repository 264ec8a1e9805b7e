/*
 * deploy/status_record: what `slipway status --record` keeps, one unit observation per endpoint
 * of a status document (sw_deploy_status) whose unit systemd described: its state, NRestarts,
 * main PID and since, so restarts between deploys are seen (`slipway report`, `slipway export
 * prometheus`).
 *
 * What it does not do: ask any host (the document is what was read), or record an endpoint whose
 * host was not reached or whose unit systemd did not describe (it says why in the document).
 */
#include <slipway/ledger.h>
#include <slipway/service.h>

#include <string.h>

/* Why an endpoint's unit cannot be recorded, or NULL when it can. */
static const char *not_recordable(const json_t *ej, const json_t *u)
{
    const char *active = sw_json_str(u, "active", "");
    if (!json_is_true(json_object_get(ej, "reached")))
        return "the host was not reached";
    if (!strcmp(sw_json_str(ej, "supervisor", ""), "up"))
        return "supervised by `slipway up`: no unit to observe";
    if (!u || sw_json_str(u, "error", "")[0] || !active[0] || !strcmp(active, "unknown"))
        return "systemd did not describe the unit";
    if (!strcmp(sw_json_str(u, "load", ""), "not-found"))
        return "the unit is not installed";
    return NULL;
}

static int record_one(struct sw_ledger *l, json_t *ej, const json_t *u, struct sw_err *e)
{
    json_int_t nr = json_integer_value(json_object_get(u, "restarts"));
    const json_t *pid = json_object_get(u, "main_pid");
    struct sw_ledger_unit_obs o = {
        .endpoint = sw_json_str(ej, "endpoint", ""),
        .host = sw_json_str(ej, "host", ""),
        .unit = sw_json_str(u, "name", ""),
        .active = sw_json_str(u, "active", ""),
        .sub = sw_json_str(u, "sub", ""),
        .result = sw_json_str(u, "result", ""),
        .n_restarts = nr > 0 ? (uint64_t)nr : 0,
        .main_pid = json_is_integer(pid) ? json_integer_value(pid) : -1,
        .since = sw_json_str(u, "since", ""),
    };
    int64_t id = 0;
    int rc = sw_ledger_record_unit_obs(l, &o, &id, e);
    if (!rc)
        sw_json_set_int(ej, "recorded", id);
    return rc;
}

int sw_deploy_status_record(json_t *doc, const char *ledger, const char *fleet_path, size_t *n,
                            struct sw_err *e)
{
    struct sw_ledger l;
    char path[4096];
    bool opened;
    *n = 0;
    memset(&l, 0, sizeof(l));
    int rc = sw_ledger_open_for(&l, ledger, fleet_path, NULL, SW_LEDGER_MUST_EXIST, &opened, path,
                                sizeof(path), e);
    if (rc)
        return rc;
    size_t i;
    json_t *ej;
    json_array_foreach(json_object_get(doc, "endpoints"), i, ej)
    {
        const json_t *u = json_object_get(ej, "unit");
        const char *why = not_recordable(ej, u);
        if (why) {
            sw_json_set_str(ej, "not_recorded", why);
            continue;
        }
        rc = record_one(&l, ej, u, e);
        if (rc)
            break;
        (*n)++;
    }
    if (!rc)
        sw_json_set_str(doc, "ledger", path);
    sw_ledger_close(&l);
    return rc;
}
