/*
 * The engine a command line starts (llama-server, `vllm serve`, vLLM's or SGLang's Python
 * entrypoint, or an image whose entrypoint is the engine) and the paths it receives (model,
 * projector, draft, tokenizer, chat template, LoRA; a vLLM --speculative-config's draft model),
 * each with its role and flag, for the path law.
 *
 * It does not check that a path exists (lint_file.c does, when asked).
 */
#include "scan_internal.h"

#include <string.h>

static int add_path(struct sw__scan *s, const char *role, const char *flag, const char *path)
{
    struct sw_unit *u = s->u;
    int rc;
    struct sw_unit_path p = {role, flag, path};
    if (!*path)
        return 0;
    SW__SCAN_PUSH(u->paths, u->n_paths, s->cap_paths, p);
    return 0;
}

struct pathopt {
    const char *flag, *alt, *role;
};

static const struct pathopt llama_opts[] = {{"-m", "--model", "model"},
                                            {"--mmproj", NULL, "projector"},
                                            {"-md", "--model-draft", "draft model"},
                                            {"--chat-template-file", NULL, "chat template"},
                                            {"--lora", NULL, "LoRA adapter"},
                                            {NULL, NULL, NULL}};
static const struct pathopt vllm_opts[] = {
    {"--model", NULL, "model"}, {"--tokenizer", NULL, "tokenizer"}, {NULL, NULL, NULL}};
static const struct pathopt sglang_opts[] = {
    {"--model-path", NULL, "model"},
    {"--tokenizer-path", NULL, "tokenizer"},
    {"--speculative-draft-model-path", NULL, "draft model"},
    {NULL, NULL, NULL}};

static int scan_spec_config(struct sw__scan *s, const char *json)
{
    long f0 = sw_alloc_failures();
    json_t *j = sw_json_parse(json, strlen(json), "--speculative-config", NULL);
    /* jansson (2.14) may return a value after a failed allocation in its lexer, with a string
     * cut short: any failure during the parse is out of memory, whatever it returned. */
    if (sw_alloc_failures() != f0) {
        json_decref(j);
        return SW_ENOMEM;
    }
    if (!j)
        return 0; /* not JSON: no draft path to read */
    int rc = 0;
    const json_t *m = json_is_object(j) ? json_object_get(j, "model") : NULL;
    if (json_is_string(m)) {
        const char *p = sw_region_strdup(s->a, json_string_value(m));
        rc = p ? add_path(s, "draft model", "--speculative-config model", p) : SW_ENOMEM;
    }
    json_decref(j);
    return rc;
}

static int scan_engine_args(struct sw__scan *s, char **argv, size_t argc, size_t i,
                            const struct pathopt *tab)
{
    int rc = 0;
    for (; i < argc && !rc; i++) {
        const char *a = argv[i];
        if (a[0] != '-')
            continue;
        const char *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
        if (!val)
            break;
        if (s->u->engine == SW_UNIT_ENGINE_VLLM && nl == 20 &&
            !strncmp(a, "--speculative-config", nl)) {
            rc = scan_spec_config(s, val);
            continue;
        }
        for (const struct pathopt *p = tab; p->flag; p++) {
            if ((strlen(p->flag) == nl && !strncmp(a, p->flag, nl)) ||
                (p->alt && strlen(p->alt) == nl && !strncmp(a, p->alt, nl))) {
                rc = add_path(s, p->role, p->flag, val);
                if (!eq)
                    i++;
                break;
            }
        }
    }
    return rc;
}

static bool python(const char *a)
{
    return sw__scan_prefix(sw__scan_base(a), "python");
}

/* Recognise the engine in argv[0..argc) (a native command, or the words after the image);
 * image helps when the words are only arguments to the image's entrypoint. */
int sw__scan_engine(struct sw__scan *s, char **argv, size_t argc, const char *image, int line)
{
    struct sw_unit *u = s->u;
    if (u->engine != SW_UNIT_ENGINE_NONE)
        return 0;
    size_t i = 0;
    bool positional = false;
    enum sw_unit_engine e = SW_UNIT_ENGINE_NONE;
    if (argc >= 1 && !strcmp(sw__scan_base(argv[0]), "llama-server")) {
        e = SW_UNIT_ENGINE_LLAMACPP;
        i = 1;
    } else if (argc >= 2 && !strcmp(sw__scan_base(argv[0]), "vllm") && !strcmp(argv[1], "serve")) {
        e = SW_UNIT_ENGINE_VLLM;
        i = 2;
    } else if (argc >= 3 && python(argv[0]) && !strcmp(argv[1], "-m") &&
               !strcmp(argv[2], "vllm.entrypoints.openai.api_server")) {
        e = SW_UNIT_ENGINE_VLLM;
        i = 3;
    } else if (argc >= 3 && python(argv[0]) && !strcmp(argv[1], "-m") &&
               !strcmp(argv[2], "sglang.launch_server")) {
        e = SW_UNIT_ENGINE_SGLANG;
        i = 3;
    } else if (image && strstr(image, "vllm") && argc >= 1 && argv[0][0] != '-' &&
               !strchr(argv[0], '=') && strncmp(argv[0], "/usr/", 5) &&
               strncmp(argv[0], "/bin/", 5)) {
        /* vllm/vllm-openai's entrypoint is `vllm serve`: a first word that is not a program is
         * the positional model. */
        e = SW_UNIT_ENGINE_VLLM;
        positional = true;
    } else if (image && (argc == 0 || argv[0][0] == '-')) {
        /* Only arguments: the image's entrypoint is the engine (vllm/vllm-openai runs the
         * OpenAI API server; llama.cpp's server images run llama-server). */
        if (strstr(image, "vllm"))
            e = SW_UNIT_ENGINE_VLLM;
        else if (strstr(image, "sglang"))
            e = SW_UNIT_ENGINE_SGLANG;
        else if (strstr(image, "llama.cpp") || strstr(image, "llama-cpp") ||
                 strstr(image, "llama-server"))
            e = SW_UNIT_ENGINE_LLAMACPP;
    }
    if (e == SW_UNIT_ENGINE_NONE)
        return 0;
    u->engine = e;
    u->engine_line = line;
    u->engine_argv = sw_region_allocn(s->a, argc + 1, sizeof(*u->engine_argv));
    if (!u->engine_argv)
        return SW_ENOMEM;
    for (size_t k = 0; k < argc; k++)
        u->engine_argv[k] = argv[k];
    u->engine_argv[argc] = NULL;
    u->engine_argc = argc;
    u->engine_arg0 = i;
    int rc = 0;
    if (positional || (e == SW_UNIT_ENGINE_VLLM && i >= 2 && i < argc &&
                       !strcmp(argv[i - 1], "serve") && argv[i][0] != '-'))
        rc = add_path(s, "model", "serve (positional)", argv[i]);
    if (!rc)
        rc = scan_engine_args(s, argv, argc, i,
                              e == SW_UNIT_ENGINE_LLAMACPP ? llama_opts
                              : e == SW_UNIT_ENGINE_VLLM   ? vllm_opts
                                                           : sglang_opts);
    return rc;
}
