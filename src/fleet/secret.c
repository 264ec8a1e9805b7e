/*
 * Secrets in a fleet file: references to them ({from_env: NAME}, {from_file: PATH}) and the
 * heuristics that refuse a literal secret (a token-like name or value) wherever one could be
 * written.
 *
 * Not here: reading a secret's value (the fleet keeps references, never values).
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Secrets.
 */
bool sw__fleet_looks_secret_name(const char *name)
{
    static const char *const words[] = {"TOKEN",      "SECRET", "PASSWORD",   "PASSWD",
                                        "API_KEY",    "APIKEY", "CREDENTIAL", "PRIVATE_KEY",
                                        "ACCESS_KEY", "AUTH"};
    char up[128];
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof(up); i++)
        up[i] = name[i] == '-' ? '_' : (char)toupper((unsigned char)name[i]);
    up[i] = '\0';
    for (size_t k = 0; k < SW_ARRAY_LEN(words); k++)
        if (strstr(up, words[k]))
            return true;
    return false;
}

bool sw_fleet_looks_secret(const char *name, const char *value)
{
    return (name && sw__fleet_looks_secret_name(name)) ||
           (value && sw__fleet_looks_secret_value(value));
}

/* Values that are secrets whatever they are called: Hugging Face, OpenAI-style, GitHub tokens,
 * bearer headers, PEM keys. */
bool sw__fleet_looks_secret_value(const char *v)
{
    size_t n = strlen(v);
    if ((!strncmp(v, "hf_", 3) && n >= 30) || (!strncmp(v, "sk-", 3) && n >= 20) ||
        (!strncmp(v, "ghp_", 4) && n >= 30) || (!strncmp(v, "github_pat_", 11) && n >= 30) ||
        !strncmp(v, "Bearer ", 7) || strstr(v, "-----BEGIN"))
        return true;
    return false;
}

int sw__fleet_dec_secret_ref(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                             struct sw_fleet_secret *out, const char *what)
{
    out->at = sw__fleet_at(v);
    sw__fleet_record(c, v);
    if (v->kind == SW__FLN_SCALAR) {
        if (sw__fleet_node_is_null(v))
            return 0;
        return sw__fleet_errp(c, v,
                              "is a literal %s: a secret must be given by reference, "
                              "{from_env: NAME} or {from_file: PATH}, never written in the fleet "
                              "file",
                              what);
    }
    if (!sw__fleet_want_map(c, v))
        return SW_EPARSE;
    if (v->n != 1) {
        return sw__fleet_errp(c, v, "needs exactly one of from_env: NAME or from_file: PATH");
    }
    const struct sw__fleet_node *k = v->kids[0], *val = v->kids[1];
    size_t saved = sw__fleet_path_push(c, k->text);
    int rc = 0;
    struct sw_fleet_str s = {0};
    if (!strcmp(k->text, "from_env")) {
        struct sw__fleet_spec sp = SW__SPEC(SW__FT_STR);
        rc = sw__fleet_dec_str(c, val, &sp, &s);
        if (!rc && s.v && !sw__fleet_is_env_name(s.v))
            rc = sw__fleet_errp(c, val, "'%s' is not an environment variable name", s.v);
        if (!rc && s.v) {
            out->kind = SW_FLEET_SECRET_ENV;
            out->ref = s.v;
            out->at = s.at;
        }
    } else if (!strcmp(k->text, "from_file")) {
        struct sw__fleet_spec sp = SW__SPEC(SW__FT_LPATH);
        rc = sw__fleet_dec_str(c, val, &sp, &s);
        if (!rc && s.v) {
            out->kind = SW_FLEET_SECRET_FILE;
            out->ref = s.v;
            out->at = s.at;
        }
    } else {
        sw__fleet_path_pop(c, saved);
        static const char *const known[] = {"from_env", "from_file"};
        return sw__fleet_unknown_key(c, k, what, known, 2);
    }
    sw__fleet_path_pop(c, saved);
    return rc;
}
