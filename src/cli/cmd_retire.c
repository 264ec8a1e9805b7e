/*
 * slipway retire PAYLOAD_DIR --to TRASH_DIR [--fleet FILE] [--ledger PATH] [--dry-run] [--json]
 *
 *   Move a payload directory out of the way, but only when no KEPT tag (not retired, of any
 *   endpoint: sw_ledger_tags_needing) still needs it: a tag whose manifest names a path in it,
 *   the directory itself, or a directory above it is a rollback path that must keep resolving.
 *   Refused: exit 1, every such tag named with the paths it needs; nothing moves.
 *
 *   The move is TRASH_DIR/<basename>. Within one filesystem it is one rename(2). Across
 *   filesystems it is a copy into a hidden partial directory beside the destination (files,
 *   directories, symlinks; modes and times kept; each file fsynced), a byte-for-byte
 *   verification of the copy against the source, a rename of the partial to its name, and only
 *   then the removal of the source. Any failure before the removal deletes the partial copy and
 *   leaves the source as it was: nothing half-moved. The move is recorded in the ledger
 *   (payload_moves). --dry-run checks and says what it would do, and moves nothing.
 *
 *   The checks, the ledger's answer and the move are payload/retire.c's (sw_payload_retire);
 *   this file reads the options and prints what it did.
 *
 * Exit: 0 moved (or would move), 1 refused (a kept tag needs it) or the move failed, 2 unusable
 * input (no such directory, a destination that exists, a trash inside the payload).
 */
#include "cli.h"

#include <slipway/payload.h>

#include <stdio.h>

static const struct sw_opt opts[] = {
    {"to", 0, "TRASH_DIR", 0, "where the payload directory goes (created when missing)", NULL},
    {"ledger", 0, "PATH", 0,
     "the ledger (default: $SLIPWAY_LEDGER, else beside the fleet, else ~/.local/share/slipway)",
     NULL},
    {"no-ledger", 0, NULL, SW_OPT_REFUSE,
     "retire is refused while a kept tag of the ledger needs the payload: it cannot run blind",
     NULL},
    {"dry-run", 0, NULL, 0, "check and say what would happen; move nothing", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway retire /models/old-qwen --to /models/.trash --fleet examples/operator.yaml",
    "slipway retire /models/old-qwen --to /mnt/cold/trash --ledger fleet.ledger.sqlite --dry-run",
    NULL,
};

const struct sw_cmd_spec sw_spec_retire = {
    .name = "retire",
    .summary = "move a payload directory to a trash dir, refused while a kept tag needs it",
    .synopsis = "PAYLOAD_DIR --to TRASH_DIR [--fleet FILE] [--ledger PATH] [--dry-run] [--json]",
    .about = "Refuses (exit 1, naming each tag and the paths it needs) while any kept tag of\n"
             "the ledger has a payload path in PAYLOAD_DIR (or PAYLOAD_DIR itself, or above\n"
             "it): retire those tags first (they are rollback targets). Otherwise moves it to\n"
             "TRASH_DIR/<name>: a rename within a filesystem; across filesystems a copy, a\n"
             "byte-for-byte verification, then the removal of the source (a failure before\n"
             "that leaves the source untouched and no partial copy). The move is recorded in\n"
             "the ledger. Exit: 0 moved, 1 refused or failed, 2 unusable input.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
    .fleet = true,
};

static void print_json(const struct sw_payload_retire *r, bool dry)
{
    json_t *out = json_object();
    sw_json_set_str(out, "payload", r->payload);
    sw_json_set_str(out, "to", r->to);
    sw_json_set_str(out, "ledger", r->ledger);
    sw_json_set_bool(out, "dry_run", dry);
    sw_json_set_str(out, "method", r->method);
    sw_json_set_int(out, "files", r->files);
    sw_json_set_int(out, "bytes", r->bytes);
    sw_json_set_new(out, "needed_by", json_incref(r->needed_by));
    sw_json_set_bool(out, "moved", r->moved);
    if (r->moved)
        sw_json_set_int(out, "move_id", r->move_id);
    sw_json_print(stdout, out, true);
    json_decref(out);
}

/* Refused: every kept tag that needs it, with the paths it needs. */
static void print_refusal(const struct sw_payload_retire *r)
{
    size_t n = json_array_size(r->needed_by);
    printf("refused: %zu kept tag%s still need%s %s (retire %s first):\n", n, n == 1 ? "" : "s",
           n == 1 ? "s" : "", r->payload, n == 1 ? "it" : "them");
    size_t i, k;
    json_t *x, *p;
    json_array_foreach(r->needed_by, i, x)
    {
        printf("  %s (endpoint %s%s):", json_string_value(json_object_get(x, "tag")),
               json_string_value(json_object_get(x, "endpoint")),
               json_is_true(json_object_get(x, "last_good")) ? ", its last-good" : "");
        json_array_foreach(json_object_get(x, "paths"), k, p)
        {
            printf(" %s", json_string_value(p));
        }
        printf("\n");
    }
}

int sw_cmd_retire(int argc, char **argv)
{
    struct sw_err e;
    struct sw_args a;
    struct sw_payload_retire r;
    int rc = SW_EXIT_OK;
    sw_err_clear(&e);
    if (!sw_args_parse(&sw_spec_retire, argc, argv, &a, &rc))
        return rc;
    bool json = a.json;
    const char *to = sw_args_str(&a, "to");
    if (a.npos < 1)
        return sw_args_usage(&a, "name the PAYLOAD_DIR to retire");
    if (!to)
        return sw_args_usage(&a, "--to TRASH_DIR is required");
    /* the fleet only places the ledger: none (no --fleet, $SLIPWAY_FLEET or ./fleet.yaml) is
     * fine */
    struct sw_cli_fleet fl;
    rc = sw_cli_fleet(&a, a.npos, SW_CLI_FLEET_OPTIONAL, &fl);
    if (rc)
        return rc;
    struct sw_payload_retire_opts o = {.ledger = sw_args_str(&a, "ledger"),
                                       .fleet = fl.path,
                                       .dry_run = sw_args_flag(&a, "dry-run"),
                                       .note = "slipway retire"};
    if (sw_payload_retire(a.pos[0], to, &o, &r, &e)) {
        rc = sw_cli_fail(&e, json);
        if (e.code == SW_EEXIST) /* a destination that exists is the caller's to clear */
            rc = SW_EXIT_USAGE;
    } else if (json_array_size(r.needed_by)) {
        if (json)
            print_json(&r, o.dry_run);
        else
            print_refusal(&r);
        fprintf(stderr, "slipway: retire: refused: %zu kept tag(s) need %s; nothing was moved\n",
                json_array_size(r.needed_by), r.payload);
        rc = SW_EXIT_FAIL;
    } else if (json) {
        print_json(&r, o.dry_run);
    } else if (o.dry_run) {
        printf("would move %s -> %s (%s, %lld files, %lld bytes); no kept tag needs it "
               "(dry run: nothing moved)\n",
               r.payload, r.to, r.method, (long long)r.files, (long long)r.bytes);
    } else {
        printf("moved %s -> %s (%s, %lld files, %lld bytes); recorded as move #%lld in %s\n",
               r.payload, r.to, r.method, (long long)r.files, (long long)r.bytes,
               (long long)r.move_id, r.ledger);
    }
    json_decref(r.needed_by);
    return rc;
}
