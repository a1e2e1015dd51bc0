/* --help from an option table (base/opt.h): the options grouped by section in
 * the order sections first appear, each with its value placeholder, its help
 * line, the default read from a defaults instance of the struct (the value
 * the code really starts with) and, for enumerations, the valid values.
 * The same entries render as plain text (--help) or as roff for the man page
 * (kvgate help --man, src/cmd/man.c), so the two cannot say different things. */
#include <stdio.h>
#include <string.h>

#include "base/opt.h"

static enum kvg_opt_help_format format = KVG_OPT_HELP_TEXT;

void kvg_opt_help_set_format(enum kvg_opt_help_format f)
{
    format = f;
}

void kvg_opt_roff_text(const char *s, FILE *out)
{
    for (const char *c = s; *c; c++) {
        /* A control character at a line's start would be read as a request. */
        if ((c == s || c[-1] == '\n') && (*c == '.' || *c == '\'')) fputs("\\&", out);
        if (*c == '\\')
            fputs("\\e", out);
        else if (*c == '-')
            fputs("\\-", out); /* a minus, as options are typed, not a hyphen */
        else if (*c == ',')
            fputs(",\\:", out); /* a line may break after it (lists without spaces) */
        else
            fputc(*c, out);
    }
}

#define MAX_LINES 512

struct line {
    const struct kvg_opt *o;
    size_t base; /* offset of the entry's table in the struct */
    const char *section;
};

static size_t collect(const struct kvg_opt *t, size_t base, struct line *out, size_t n)
{
    const char *section = "options";
    for (const struct kvg_opt *o = t; !kvg__opt_end(o) && n < MAX_LINES; o++) {
        if (o->type == KVG_OPT_INCLUDE && !o->name) {
            n = collect(o->sub, base + o->off, out, n);
            continue;
        }
        if (o->section) section = o->section;
        out[n++] = (struct line){o, base, section};
    }
    return n;
}

static void meta_of(const struct kvg_opt *o, char *out, size_t cap)
{
    if (o->meta) {
        snprintf(out, cap, "%s", o->meta);
        return;
    }
    switch (o->type) {
    case KVG_OPT_ENUM:
    case KVG_OPT_LEVEL:
        kvg__opt_choices_text(o, "|", out, cap);
        return;
    case KVG_OPT_INT:
    case KVG_OPT_U32:
    case KVG_OPT_SIZE:
    case KVG_OPT_U64:
        snprintf(out, cap, "N");
        return;
    case KVG_OPT_SECS_MS:
    case KVG_OPT_SECS_MS64:
        snprintf(out, cap, "SECS");
        return;
    case KVG_OPT_MS:
        snprintf(out, cap, "MS");
        return;
    case KVG_OPT_DOUBLE:
        snprintf(out, cap, "X");
        return;
    case KVG_OPT_BOOL:
    case KVG_OPT_NBOOL:
        out[0] = 0;
        return;
    case KVG_OPT_LIST:
    case KVG_OPT_LIST_APPEND:
        snprintf(out, cap, "VALUE...");
        return;
    default:
        snprintf(out, cap, "VALUE");
        return;
    }
}

/* "{a, b, c}": a nested table's keys, for YAML-only entries. */
static void keys_of(const struct kvg_opt *t, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "{"), k = 0;
    for (const struct kvg_opt *o = t; !kvg__opt_end(o) && n < cap; o++)
        if (o->name && !(o->flags & (KVG_OPT_F_KEY | KVG_OPT_F_LINE)))
            n += (size_t)snprintf(out + n, cap - n, "%s%s", k++ ? ", " : "", o->name);
    if (n < cap) snprintf(out + n, cap - n, "}");
}

/* " (default: X)" and " (also --alias)" after an entry's help line. */
static void tail_of(const struct line *l, const void *defaults, char *def, size_t defcap,
                    char *alias, size_t aliascap)
{
    const struct kvg_opt *o = l->o;
    def[0] = alias[0] = 0;
    if (defaults && !(o->flags & KVG_OPT_F_NODEFAULT) && o->type != KVG_OPT_BOOL &&
        o->type != KVG_OPT_NBOOL) {
        char v[500];
        if (!kvg__opt_format(o, (const char *)defaults + l->base, v, sizeof v) && v[0])
            snprintf(def, defcap, " (default: %s)", v);
    }
    if (o->alias) snprintf(alias, aliascap, " (also --%s)", o->alias);
}

/* "{a, b}" with the brackets of its kind: "[{...}, ...]" rows, "{NAME: {...}, ...}" maps. */
static void yaml_shape(const struct kvg_opt *o, char *out, size_t cap)
{
    char keys[256];
    keys_of(o->sub, keys, sizeof keys);
    snprintf(out, cap, "%s%s%s",
             o->type == KVG_OPT_ROWS  ? "["
             : o->type == KVG_OPT_MAP ? "{NAME: "
                                      : "",
             keys,
             o->type == KVG_OPT_ROWS  ? ", ...]"
             : o->type == KVG_OPT_MAP ? ", ...}"
                                      : "");
}

/* The entry as a man page's tagged paragraph: the flag in bold, its
 * placeholder in italics, then the same line --help prints. */
static void roff_one(const struct line *l, const void *defaults, FILE *out)
{
    const struct kvg_opt *o = l->o;
    char shape[300], meta[256], def[600], alias[160];
    tail_of(l, defaults, def, sizeof def, alias, sizeof alias);
    fputs(".TP\n\\fB", out);
    if (kvg__opt_yaml_only(o)) {
        yaml_shape(o, shape, sizeof shape);
        kvg_opt_roff_text(o->name, out);
        fputs(":\\fR ", out);
        kvg_opt_roff_text(shape, out);
        fputs("\n", out);
        kvg_opt_roff_text(o->help ? o->help : "", out);
        fputs(" (YAML file only)\n", out);
        return;
    }
    meta_of(o, meta, sizeof meta);
    fputs("\\-\\-", out);
    kvg_opt_roff_text(o->name, out);
    fputs("\\fR", out);
    if (meta[0]) {
        fputs(" \\fI", out);
        kvg_opt_roff_text(meta, out);
        fputs("\\fR", out);
    }
    fputs("\n", out);
    kvg_opt_roff_text(o->help ? o->help : "", out);
    kvg_opt_roff_text(def, out);
    kvg_opt_roff_text(alias, out);
    fputs("\n", out);
}

static void print_one(const struct line *l, const void *defaults, FILE *out)
{
    const struct kvg_opt *o = l->o;
    char head[600], meta[256], def[600], alias[160];
    if (format == KVG_OPT_HELP_ROFF) {
        roff_one(l, defaults, out);
        return;
    }
    if (kvg__opt_yaml_only(o)) {
        yaml_shape(o, meta, sizeof meta);
        snprintf(head, sizeof head, "%s: %s", o->name, meta);
        fprintf(out, "  %-32s %s (YAML file only)\n", head, o->help ? o->help : "");
        return;
    }
    meta_of(o, meta, sizeof meta);
    snprintf(head, sizeof head, "--%s%s%s", o->name, meta[0] ? " " : "", meta);
    tail_of(l, defaults, def, sizeof def, alias, sizeof alias);
    fprintf(out, "  %-32s %s%s%s\n", head, o->help ? o->help : "", def, alias);
}

void kvg_opt_help(const struct kvg_opt *t, const void *defaults, FILE *out)
{
    struct line lines[MAX_LINES];
    size_t n = collect(t, 0, lines, 0);
    int roff = format == KVG_OPT_HELP_ROFF;
    if (roff) fprintf(out, "%s\n", KVG_OPT_ROFF_BEGIN);
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < i && strcmp(lines[j].section, lines[i].section)) j++;
        if (j < i) continue; /* this section was printed with its first entry */
        if (roff) {
            fputs(".SS \"", out);
            kvg_opt_roff_text(lines[i].section, out);
            fputs("\"\n", out);
        } else {
            fprintf(out, "%s%s:\n", i ? "\n" : "", lines[i].section);
        }
        for (size_t k = i; k < n; k++)
            if (!strcmp(lines[k].section, lines[i].section)) print_one(&lines[k], defaults, out);
    }
    if (roff) fprintf(out, "%s\n", KVG_OPT_ROFF_END);
}
