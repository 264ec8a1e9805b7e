/*
 * Fuzz host's three parsers of what a host prints: `systemctl show` KEY=VALUE lines,
 * `journalctl -o json` entries and the facts script's @key lines. The first byte picks the
 * parser; any bytes must parse or be refused (never crash, never read past the input), and what
 * parsed must be self-consistent (every path asked has its answer, every entry its cursor).
 */
#include <slipway/host.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool init;
    if (!init) {
        sw_core_init();
        init = true;
    }
    if (!size)
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    struct sw_err e;
    switch (data[0] % 3) {
    case 0: {
        struct sw_host_unit u;
        if (sw_host_unit_parse(text, len, &u, &e) == 0 &&
            (memchr(u.active_state, 0, sizeof(u.active_state)) == NULL ||
             memchr(u.active_enter, 0, sizeof(u.active_enter)) == NULL))
            abort();
        break;
    }
    case 1: {
        struct sw_host_journal j = {0};
        if (sw_host_journal_parse(text, len, &j, &e) == 0) {
            for (size_t i = 0; i < j.n; i++)
                if (!j.v[i].cursor)
                    abort();
            if (j.n && (!j.cursor || strcmp(j.cursor, j.v[j.n - 1].cursor)))
                abort();
        }
        sw_host_journal_free(&j);
        break;
    }
    default: {
        static const char *const paths[] = {"/a", "~/b", "c"};
        struct sw_host_facts f;
        if (sw_host_facts_parse(text, len, paths, 3, &f, &e) == 0) {
            if (f.n_paths != 3)
                abort();
            for (size_t i = 0; i < 3; i++)
                if (strcmp(f.paths[i].path, paths[i]))
                    abort();
            sw_host_facts_free(&f);
        }
        break;
    }
    }
    return 0;
}
