/*
 * gate/payload: flags against the files, without the network. Spec-decode methods that need
 * weights from the checkpoint (MTP/NextN: the layers the config declares against the tensors
 * shipped, payload/layout) or a draft model (payload.draft set and here); a configured projector
 * must be a projector GGUF with its vision tensors. Files not on this machine: skip, naming them.
 *
 * What it deliberately does not do: download or verify a payload (payload/), or read a path that
 * means the endpoint's host ("~"), which may not be this one.
 */
#include "gate_internal.h"

#include <slipway/payload.h>

#include <string.h>
#include <sys/stat.h>

static bool is_file(const char *p)
{
    struct stat st;
    return p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}
static bool is_dir(const char *p)
{
    struct stat st;
    return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* payload-relative path -> absolute (only absolute or relative-to-an-absolute-dir paths are read
 * here: "~" means the endpoint's host, which may not be this one). */
static const char *payload_file(const struct sw_fleet_endpoint *ep, const char *f, char *out,
                                size_t n)
{
    if (!f)
        return NULL;
    if (f[0] == '/')
        snprintf(out, n, "%s", f);
    else if (ep->payload.path.v && ep->payload.path.v[0] == '/')
        snprintf(out, n, "%s/%s", ep->payload.path.v, f);
    else
        return NULL;
    return out;
}

int sw__gate_payload(struct sw__gate_run *r, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->ep;
    const struct sw_fleet_shape *s = &ep->shape;
    char path[4096];
    struct sw_err le;
    (void)e;

    /* speculative decoding */
    if (s->spec_method.v) {
        const char *m = s->spec_method.v;
        bool mtp = !strcmp(m, "mtp") || !strcmp(m, "nextn");
        bool needs_draft = !strcmp(m, "draft") || !strcmp(m, "eagle") || !strcmp(m, "eagle3");
        json_t *g = NULL;
        sw_err_clear(&le);
        if (needs_draft) {
            const char *dp = payload_file(ep, ep->payload.draft.v, path, sizeof(path));
            if (!ep->payload.draft.v)
                g = sw__gate_add(r, "payload", SW_GATE_FAIL,
                                 "spec_decode.method %s needs a draft model and payload.draft is "
                                 "not set",
                                 m);
            else if (!dp || (!is_file(dp) && !is_dir(dp)))
                g = sw__gate_add(r, "payload", SW_GATE_SKIP,
                                 "spec_decode.method %s: the draft %s is not on this machine", m,
                                 ep->payload.draft.v);
            else
                g = sw__gate_add(r, "payload", SW_GATE_PASS,
                                 "spec_decode.method %s: the draft %s is there", m, dp);
            if (g && !ep->payload.draft.v)
                sw__gate_fix(g, "set payload.draft, or drop spec_decode");
        } else if (mtp) {
            /* payload/layout's count: declared MTP layers vs the weights that belong to them */
            const char *where = ep->engine == SW_FLEET_LLAMACPP && ep->payload.gguf.v
                                    ? payload_file(ep, ep->payload.gguf.v, path, sizeof(path))
                                    : payload_file(ep, ep->payload.path.v, path, sizeof(path));
            struct sw_payload_mtp mt;
            memset(&mt, 0, sizeof(mt));
            if (!where || (!is_file(where) && !is_dir(where))) {
                g = sw__gate_add(r, "payload", SW_GATE_SKIP,
                                 "spec_decode.method %s: the checkpoint %s is not on this "
                                 "machine; its MTP tensors cannot be counted",
                                 m, ep->payload.path.v ? ep->payload.path.v : "(no payload.path)");
            } else if (sw_payload_mtp_check(where, &mt, &le)) {
                char eb[1200];
                g = sw__gate_add(r, "payload", SW_GATE_SKIP,
                                 "spec_decode.method %s: cannot read %s: %s", m, where,
                                 sw_err_format(&le, eb, sizeof(eb)));
            } else {
                bool ok = sw_payload_ships_mtp(&mt);
                g = sw__gate_add(r, "payload", ok ? SW_GATE_PASS : SW_GATE_FAIL,
                                 "spec_decode.method %s: %s declares %lld MTP layers (%s), the "
                                 "weights hold %llu of their tensors%s",
                                 m, where, (long long)mt.declared,
                                 mt.source[0] ? mt.source : "nothing declared",
                                 (unsigned long long)mt.tensors,
                                 mt.weights_read ? "" : " (not every header was read)");
                sw__gate_num(g, "mtp_layers_declared", (double)mt.declared);
                sw__gate_num(g, "mtp_tensors", (double)mt.tensors);
                if (!ok)
                    sw__gate_fix(g, "drop spec_decode (it would draft from nothing), or point "
                                    "payload.draft at a checkpoint that ships the MTP head");
            }
        } else {
            sw__gate_add(r, "payload", SW_GATE_PASS,
                         "spec_decode.method %s needs no tensors from the checkpoint", m);
        }
    }
    /* the projector: vision is promised when one is configured */
    if (ep->payload.mmproj.v) {
        const char *mp = payload_file(ep, ep->payload.mmproj.v, path, sizeof(path));
        json_t *g;
        if (!mp || !is_file(mp)) {
            sw__gate_add(r, "payload", SW_GATE_SKIP,
                         "projector %s is not on this machine: its vision tensors cannot be "
                         "checked here",
                         ep->payload.mmproj.v);
        } else {
            struct sw_payload_layout lay;
            struct sw_payload_layout_opts lo = {.mmproj = mp, .vision = true};
            char dir[4096];
            memset(&lay, 0, sizeof(lay));
            snprintf(dir, sizeof(dir), "%s", mp);
            char *slash = strrchr(dir, '/');
            if (slash && slash != dir)
                *slash = '\0';
            sw_err_clear(&le);
            /* the model's own directory when it is here, else the projector's */
            const char *d0 =
                ep->payload.path.v && is_dir(ep->payload.path.v) ? ep->payload.path.v : dir;
            if (sw_payload_layout_check(d0, &lo, &lay, &le)) {
                char eb[1200];
                sw__gate_add(r, "payload", SW_GATE_SKIP, "projector %s: %s", mp,
                             sw_err_format(&le, eb, sizeof(eb)));
            } else {
                const char *why = NULL;
                for (size_t i = 0; i < lay.n_issues; i++)
                    if (lay.issues[i].kind == SW_PAYLOAD_ISSUE_PROJECTOR)
                        why = lay.issues[i].msg;
                bool ok = lay.has_projector && !why;
                g = sw__gate_add(r, "payload", ok ? SW_GATE_PASS : SW_GATE_FAIL, "projector %s: %s",
                                 mp,
                                 ok ? "a projector GGUF with its vision tensors"
                                    : (why ? why : "no projector found"));
                if (!ok)
                    sw__gate_fix(g, "point mmproj at the model's projector GGUF, or set "
                                    "mmproj: null for text-only");
            }
            sw_payload_layout_free(&lay);
        }
    }
    if (!s->spec_method.v && !ep->payload.mmproj.v)
        sw__gate_add(r, "payload", SW_GATE_PASS,
                     "no spec-decode flags and no projector: nothing to hold against the files");
    return 0;
}
