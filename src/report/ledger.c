/*
 * report/ledger: the ledger a report, an export or a Kubernetes render reads, opened read-only:
 * the one named, else the one beside the fleet file. None there yet is no error: the figures
 * then come from the fleet alone (every ledger-backed figure null, with that reason); one that
 * was named must exist.
 *
 * What it does not do: create a ledger, or write to one (a report writes nothing but files).
 */
#include <slipway/ledger.h>
#include <slipway/report.h>

int sw_report_ledger_open(struct sw_ledger *l, const char *ledger, const char *fleet_path,
                          bool *opened, char *path, size_t n, struct sw_err *e)
{
    struct sw_ledger_open_opts lo = {.readonly = true};
    return sw_ledger_open_for(l, ledger, fleet_path, &lo, SW_LEDGER_DEFAULT_MAY_BE_ABSENT, opened,
                              path, n, e);
}
