/*
 * plan/cmdline: a verbatim llama-server command line planned the way `slipway plan --engine
 * llama.cpp -- llama-server ...` does it (sw_plan_llamacpp_cmdline): llama-server's flags read by
 * the law's argv reader, the architecture from a declaration (--arch) or the GGUF header, the
 * law's budget over the devices the caller names (--gpu, --host-memory), the draft model and the
 * projector priced beside it, and whether every device holds its total. `--gpu NAME=BYTES` is
 * read here too (sw_plan_parse_gpu).
 *
 * What it deliberately does not do: plan a fleet endpoint (sw_plan_endpoint renders its argv and
 * reads the fleet's devices), print (cli), or read a payload that is not a GGUF.
 */
#include <slipway/arch.h>
#include <slipway/gguf.h>
#include <slipway/memory.h>
#include <slipway/plan.h>

#include <string.h>

int sw_plan_parse_gpu(const char *v, struct sw_llamacpp_env *env, struct sw_err *e)
{
    const char *eq = strchr(v, '=');
    uint64_t bytes;
    if (env->n_gpu >= SW_LLAMACPP_MAX_DEV - 1)
        return sw_err_set(e, SW_ERANGE, "--gpu: at most %d GPUs", SW_LLAMACPP_MAX_DEV - 1);
    if (!eq || eq == v || (size_t)(eq - v) >= sizeof(env->gpu_name[0]))
        return sw_err_set(e, SW_EINVAL, "--gpu: want NAME=BYTES (e.g. CUDA0=24GiB), got '%s'", v);
    if (sw_parse_bytes(eq + 1, &bytes, e)) {
        sw_err_prefix(e, "--gpu %s", v);
        return e ? e->code : SW_EINVAL;
    }
    memcpy(env->gpu_name[env->n_gpu], v, (size_t)(eq - v));
    env->gpu_name[env->n_gpu][eq - v] = '\0';
    env->gpu_memory[env->n_gpu] = bytes;
    env->n_gpu++;
    return 0;
}

/* The architecture: the declaration at arch_path, else the GGUF's header (header-only: a file
 * whose tensor data is absent plans as well). */
static int cmdline_arch(struct sw_plan_cmdline *c, const char *arch_path, struct sw_err *e)
{
    json_t *decl = NULL;
    struct sw_gguf *g = NULL;
    int rc;
    if (arch_path) {
        decl = sw_json_load_file(arch_path, 16u << 20, e);
        rc = decl ? sw_arch_from_json(decl, arch_path, &c->arch, e) : (e ? e->code : SW_EPARSE);
    } else {
        const struct sw_gguf_read_opts ho = {.header_only = true};
        rc = sw_gguf_open_opts(c->args->model, &ho, &g, e);
        if (!rc)
            rc = sw_arch_from_gguf(g, &c->arch, e);
    }
    json_decref(decl);
    sw_gguf_free(g);
    return rc;
}

int sw_plan_llamacpp_cmdline(int argc, const char *const *argv, const char *arch_path,
                             const struct sw_llamacpp_env *env, struct sw_plan_cmdline *out,
                             struct sw_err *e)
{
    int rc;
    memset(out, 0, sizeof(*out));
    out->args = sw_calloc(1, sizeof(*out->args));
    if (!out->args)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    sw_llamacpp_args_init(out->args);
    rc = sw_llamacpp_args_parse(out->args, argc, argv, e);
    if (rc)
        return rc;
    rc = cmdline_arch(out, arch_path, e);
    if (rc)
        return rc;
    out->plan = sw_calloc(1, sizeof(*out->plan));
    if (!out->plan)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    rc = sw_llamacpp_plan(out->arch, out->args, env, out->plan, e);
    if (!rc)
        rc = sw_plan_llamacpp_extras(NULL, out->args, env, false, out->plan, e);
    if (rc)
        return rc;
    out->fits = sw_plan_llamacpp_fits(out->plan);
    return 0;
}

void sw_plan_cmdline_free(struct sw_plan_cmdline *c)
{
    sw_free(c->plan);
    sw_arch_free(c->arch);
    sw_free(c->args);
    memset(c, 0, sizeof(*c));
}
