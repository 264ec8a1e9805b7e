/*
 * Fuzz the fleet loader and the env-file parser from memory.
 *
 * Input: YAML text, optionally followed by a line "#%env" and an env file's text; every env_file
 * the YAML names reads that second part (no file system access). The whole input is also parsed
 * as an env file on its own. A fleet that loads is then walked the way later modules will walk it
 * (JSON, positions, rule matching, shape overlay), so a half-initialized value would show.
 * The caller's environment is a fixed fake one.
 */
#include <slipway/fleet.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *fake_env(void *ctx, const char *name)
{
    (void)ctx;
    static const char *const kv[][2] = {{"SEQS", "3"},
                                        {"PORT", "8080"},
                                        {"HOME", "/home/fuzz"},
                                        {"EMPTY", ""},
                                        {"CTX_SIZE", "4096"}};
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
        if (!strcmp(kv[i][0], name))
            return kv[i][1];
    return NULL;
}

struct envpart {
    const char *p;
    size_t n;
};

static int read_env(void *ctx, const char *path, size_t max, char **out, size_t *len,
                    struct sw_err *e)
{
    const struct envpart *ep = ctx;
    (void)path;
    if (!ep->p)
        return sw_err_set(e, SW_ENOENT, "no env part in this input");
    if (ep->n > max)
        return sw_err_set(e, SW_ERANGE, "too big");
    *out = sw_malloc(ep->n + 1);
    if (!*out)
        return sw_err_set(e, SW_ENOMEM, "oom");
    memcpy(*out, ep->p, ep->n);
    (*out)[ep->n] = '\0';
    *len = ep->n;
    return 0;
}

static void walk(const struct sw_fleet *f)
{
    json_t *j = sw_fleet_to_json(f);
    json_decref(j);
    struct sw_fleet_at at;
    sw_fleet_pos(f, "harness.context_window", &at);
    for (size_t i = 0; i < f->n_endpoints; i++) {
        const struct sw_fleet_endpoint *ep = &f->endpoints[i];
        char path[256];
        snprintf(path, sizeof(path), "endpoints.%s.shape.seqs", ep->name);
        sw_fleet_pos(f, path, &at);
        for (size_t r = 0; r < ep->n_known_bad; r++) {
            sw_fleet_rule_matches(&ep->known_bad[r], &ep->shape);
            for (size_t b = 0; b < ep->n_boots; b++) {
                struct sw_fleet_shape s = ep->shape;
                sw_fleet_shape_overlay(&s, &ep->boots[b].shape);
                sw_fleet_rule_matches(&ep->known_bad[r], &s);
            }
        }
        for (size_t k = 0; k < ep->n_knobs; k++)
            sw_fleet_endpoint_knob(ep, ep->knobs[k].name);
        sw_fleet_client_window(f, ep);
        json_t *sj = sw_fleet_shape_to_json(&ep->shape);
        json_decref(sj);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int inited;
    if (!inited) {
        sw_core_init();
        inited = 1;
    }
    const char *text = (const char *)data;
    size_t ylen = size;
    struct envpart env = {0};
    for (size_t i = 0; i + 6 <= size; i++) {
        if ((i == 0 || text[i - 1] == '\n') && !memcmp(text + i, "#%env\n", 6)) {
            ylen = i;
            env.p = text + i + 6;
            env.n = size - i - 6;
            break;
        }
    }
    struct sw_fleet_opts o = {
        .getenv = fake_env, .read = read_env, .read_ctx = &env, .max_errors = 20};
    struct sw_fleet *f = NULL;
    struct sw_err e;
    if (!sw_fleet_load_mem("fuzz/fleet.yaml", text, ylen, &o, &f, &e)) {
        walk(f);
        sw_fleet_free(f);
    }
    struct sw_fleet_envfile *ef = NULL;
    if (!sw_fleet_envfile_parse("fuzz.env", text, size, fake_env, NULL, &ef, &e)) {
        for (size_t i = 0; i < ef->n_vars; i++)
            sw_fleet_envfile_get(ef, ef->vars[i].key);
        sw_fleet_envfile_free(ef);
    }
    double v;
    char unit[64];
    char line[256];
    size_t ln = 0;
    while (ln < size && ln + 1 < sizeof(line) && text[ln] != '\n') {
        line[ln] = text[ln];
        ln++;
    }
    line[ln] = '\0';
    sw_fleet_parse_qty(line, &v, unit, sizeof(unit), &e);
    return 0;
}
