/* What a tokenizer path names (kvg_tok_load's path and config_path): a
 * tokenizer.json file, or a model directory as vLLM and SGLang take one
 * (--model DIR, a HuggingFace snapshot), whose tokenizer.json and, when no
 * config was named, tokenizer_config.json are used. A path that does not
 * exist but reads as a HuggingFace model id (Qwen/Qwen3-8B) is refused with
 * what to pass instead: kvgate loads local files only, it never downloads. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/err.h"
#include "tokenizer/tok_impl.h"

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* ORG/NAME as the Hub spells ids: one '/', neither part empty nor starting
 * with '.', letters, digits, '-', '_', '.'; not a .json file name. */
static int looks_like_hub_id(const char *p)
{
    const char *slash = strchr(p, '/');
    if (!slash || slash == p || !slash[1] || strchr(slash + 1, '/')) return 0;
    if (p[0] == '.' || slash[1] == '.') return 0;
    for (const char *c = p; *c; c++)
        if (c != slash && !((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                            (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.'))
            return 0;
    size_t n = strlen(p);
    return !(n > 5 && !strcmp(p + n - 5, ".json"));
}

static int join(char *out, size_t cap, const char *dir, const char *name, char *err, size_t errlen)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    int k = snprintf(out, cap, "%.*s/%s", (int)n, dir, name);
    if (k < 0 || (size_t)k >= cap)
        return kvg_err_set(err, errlen, -ENAMETOOLONG, "%s: path too long", dir);
    return 0;
}

int kvg__tok_resolve(const char *path, const char *config_path, char *tok_out, size_t tok_cap,
                     char *cfg_out, size_t cfg_cap, char *err, size_t errlen)
{
    int rc;
    cfg_out[0] = 0;
    if (is_dir(path)) {
        if ((rc = join(tok_out, tok_cap, path, "tokenizer.json", err, errlen))) return rc;
        if (!exists(tok_out)) {
            char model[4096];
            int sp = !join(model, sizeof model, path, "tokenizer.model", NULL, 0) && exists(model);
            return kvg_err_set(
                err, errlen, -ENOENT, "%s: a directory without tokenizer.json%s", path,
                sp ? " (it has a SentencePiece tokenizer.model, which kvgate does not read: "
                     "transformers' AutoTokenizer.from_pretrained(DIR).save_pretrained(DIR) "
                     "writes its tokenizer.json)"
                   : "; pass the model's directory (its tokenizer.json and "
                     "tokenizer_config.json) or a tokenizer.json file");
        }
        if (!config_path) {
            if ((rc = join(cfg_out, cfg_cap, path, "tokenizer_config.json", err, errlen)))
                return rc;
            if (!exists(cfg_out)) cfg_out[0] = 0; /* a tokenizer without a config is valid */
        }
    } else if (!exists(path) && looks_like_hub_id(path)) {
        return kvg_err_set(
            err, errlen, -ENOENT,
            "'%s' is not a file or directory here; if it is a HuggingFace model id: kvgate reads "
            "local files and downloads nothing, so pass the model's directory (the one given to "
            "the engine, or a HuggingFace cache snapshot) or its tokenizer.json, e.g. after "
            "`huggingface-cli download %s tokenizer.json tokenizer_config.json --local-dir DIR`: "
            "--tokenizer DIR",
            path, path);
    } else if (snprintf(tok_out, tok_cap, "%s", path) >= (int)tok_cap) {
        return kvg_err_set(err, errlen, -ENAMETOOLONG, "tokenizer path too long");
    }
    if (config_path) {
        if (is_dir(config_path))
            return join(cfg_out, cfg_cap, config_path, "tokenizer_config.json", err, errlen);
        if (snprintf(cfg_out, cfg_cap, "%s", config_path) >= (int)cfg_cap)
            return kvg_err_set(err, errlen, -ENAMETOOLONG, "tokenizer config path too long");
    }
    return 0;
}
