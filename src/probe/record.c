/*
 * probe/record: a battery kept in the ledger (`slipway probe --record`): its report document
 * with the endpoint it was run against (or only its URL), when it started, and where.
 *
 * What it does not do: create a ledger (it must exist beside the fleet, or be named), or record
 * a battery whose report could not be built.
 */
#include <slipway/ledger.h>
#include <slipway/probe.h>

#include <string.h>

int sw_probe_record(const char *ledger, const char *fleet_path, const char *endpoint,
                    const struct sw_probe_report *rep, int64_t started, const json_t *doc,
                    int64_t *id, char *path, size_t n, struct sw_err *e)
{
    struct sw_ledger led;
    bool opened;
    memset(&led, 0, sizeof(led));
    int rc = sw_ledger_open_for(&led, ledger, fleet_path, NULL, SW_LEDGER_MUST_EXIST, &opened, path,
                                n, e);
    if (!rc)
        rc = sw_ledger_record_battery(&led, endpoint, 0, rep->url, started, doc, id, e);
    sw_ledger_close(&led);
    return rc;
}
