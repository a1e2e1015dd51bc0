/* Options: one table per command says every option once, and the same table
 * parses the command line, loads the YAML file, prints --help, emits argv for
 * a child process and compares two configurations.
 *
 * A table is an array of struct kvg_opt ended by KVG_OPT_END (an entry with
 * neither name nor type: unnamed includes have a NULL name too).
 * Each entry names a field of the target struct by offset (offsetof) and says
 * its type; the parsers write there and nowhere else. The types:
 *
 *   STR            char[size]; longer values are refused
 *   INT, U32       int / uint32_t, within [min, max] when min < max
 *   SIZE, U64      size_t / uint64_t, same range rule
 *   SECS_MS(64)    a number of seconds (fractions allowed) kept as uint32_t
 *                  (uint64_t) milliseconds; MS: milliseconds as uint32_t
 *   DOUBLE         double, same range rule
 *   BOOL, NBOOL    int; the bare flag sets 1 (BOOL) or 0 (NBOOL: --disable-x,
 *                  --no-x); --x=true|false and YAML true/false set either way
 *   LIST           struct kvg_strlist: values up to the next --flag; a later
 *                  use replaces the list. LIST_APPEND: each use adds
 *   ENUM           one of choices (NULL-terminated): kept as the string when
 *                  size > 0 (char[size]), else as its index (int)
 *   LEVEL          a log level name, kept as int (base/log.h)
 *   CUSTOM         parse(obj, entry, value, index) does it; with
 *                  KVG_OPT_F_MULTI it takes a list, index counting from 0;
 *                  format() (optional) gives its text for help and emit
 *   INCLUDE        the table sub applied at base + off: unnamed, its entries
 *                  are this table's (one table of policy options shared by
 *                  several commands); named, a nested YAML mapping
 *                  (name: {key: ...}), YAML only, check() run after it
 *   ROWS           a YAML list of mappings whose keys come from sub (YAML
 *                  only). size == 0: columns; each sub entry is a LIST or
 *                  LIST_APPEND at the parent's offset, and a key any row has
 *                  gives that list one value per row, "none" where a row
 *                  lacks it (serve's workers:). size > 0: an array of structs
 *                  at off, size bytes each, its size_t count at count_off
 *                  (rows add to it), at most max_rows; init() then the row's
 *                  keys then check(). In both, KVG_OPT_F_REQUIRED keys must be
 *                  in every row, and a row that is a plain scalar is the
 *                  KVG_OPT_F_PRIMARY key's value (workers: [http://a:8000])
 *                  when the sub table has one (in structs, no other key may
 *                  then be required). A row table's struct may sit in a row
 *                  of another: rows of rows
 *   MAP            a YAML mapping from names to rows (YAML only): rows of
 *                  structs as ROWS has them, each key set through the sub
 *                  entry flagged KVG_OPT_F_KEY (tenants: {team-a: {...}}); a
 *                  plain scalar row, as ROWS's (split: {v1: 90, v2: 10})
 *
 * A ROWS of structs or MAP entry with seen() is told each key a row sets
 * (after its value is set): for a row's values that default to another
 * part of the configuration unless the row gives its own.
 *
 * Rows of structs (ROWS, MAP) with KVG_OPT_F_ALLOC: the field at off is a
 * pointer to the array, grown (realloc) by the file's rows; the caller frees
 * it (kvg_opt_free does). A sub entry flagged KVG_OPT_F_LINE (an INT) gets
 * the row's line in the file. A grown array's row is counted before its
 * keys are read, so a failure leaves what the row's CUSTOM parsers
 * allocated where the caller's cleanup finds it (other rows count once
 * checked).
 *
 * In YAML, every mapping's keys must be distinct; KVG_OPT_F_REQUIRED keys of
 * a named include, a row or the file's top level must be there; integers
 * (here and on the command line) may use '_' separators (100_000). An
 * unknown key reads "path.key: unknown key (did you mean x?)", or, when the
 * entry holding the table says what its keys are (noun, expect), "path:
 * unknown limit 'x' (expected ...)".
 *
 * For example (serve/config.c has the full one):
 *
 *   static const struct kvg_opt flags[] = {
 *       {"port", NULL, KVG_OPT_INT, offsetof(struct cfg, port), .min = 0, .max = 65535,
 *        .help = "port to listen on", .section = "listening"},
 *       {NULL, NULL, KVG_OPT_INCLUDE, offsetof(struct cfg, policy_opts),
 *        .sub = kvg_policy_opt_table},
 *       KVG_OPT_END,
 *   };
 *
 * Names are flag names without "--" ('-' between words); a YAML key matches
 * with '_' or '-'. Errors name the flag or the file:line: path of the key and
 * what was expected; an unknown name gets the nearest known one when close.
 * Every function that fails writes a one-line message into err and returns
 * KVG_ECONFIG (or -ENOMEM). Nothing here allocates but kvg_strlist values,
 * which the caller frees with kvg_opt_free. */
#ifndef KVG_BASE_OPT_H
#define KVG_BASE_OPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define KVG_OPT_LIST_MAX 256

/* A list option's values (owned strings). */
struct kvg_strlist {
    char *v[KVG_OPT_LIST_MAX];
    size_t n;
};
void kvg_strlist_free(struct kvg_strlist *l);
/* Appends a copy of s; -ENOSPC when full, -ENOMEM. */
int kvg_strlist_add(struct kvg_strlist *l, const char *s);

enum kvg_opt_type {
    KVG_OPT_STR,
    KVG_OPT_INT,
    KVG_OPT_U32,
    KVG_OPT_SIZE,
    KVG_OPT_U64,
    KVG_OPT_SECS_MS,
    KVG_OPT_SECS_MS64,
    KVG_OPT_MS,
    KVG_OPT_DOUBLE,
    KVG_OPT_BOOL,
    KVG_OPT_NBOOL,
    KVG_OPT_LIST,
    KVG_OPT_LIST_APPEND,
    KVG_OPT_ENUM,
    KVG_OPT_LEVEL,
    KVG_OPT_CUSTOM,
    KVG_OPT_INCLUDE,
    KVG_OPT_ROWS,
    KVG_OPT_MAP,
};

enum {
    KVG_OPT_F_MULTI = 1,       /* CUSTOM: takes a list of values */
    KVG_OPT_F_NODEFAULT = 2,   /* --help shows no default (the help text says it) */
    KVG_OPT_F_REQUIRED = 4,    /* a key every ROWS row must have */
    KVG_OPT_F_PRIMARY = 8,     /* ROWS columns: a row that is a plain scalar is this key */
    KVG_OPT_F_KEY = 16,        /* MAP's row table: the entry the row's name is set through */
    KVG_OPT_F_LINE = 32,       /* a row table's INT that gets the row's line */
    KVG_OPT_F_ALLOC = 64,      /* ROWS of structs, MAP: off holds a pointer to a grown array */
    KVG_OPT_F_LIST_ONLY = 128, /* MULTI in YAML: a list of one value or more, not a scalar */
};

struct kvg_opt;
/* obj is the struct the entry's table describes (the row, for ROWS). */
typedef int (*kvg_opt_parse_fn)(void *obj, const struct kvg_opt *o, const char *value, size_t index,
                                char *err, size_t errlen);
/* Writes the field's text (for --help and emit); returns 0, or < 0 for none. */
typedef int (*kvg_opt_format_fn)(const void *obj, const struct kvg_opt *o, char *out, size_t cap);
/* ROWS init / check, named INCLUDE check: parent is the struct holding the
 * entry, item the row (or the included struct), index the row's. */
typedef int (*kvg_opt_item_fn)(void *parent, void *item, size_t index, char *err, size_t errlen);
/* ROWS of structs, MAP: row item set the key of entry o (o is the sub
 * table's entry, or an entry of a table it includes unnamed). */
typedef void (*kvg_opt_seen_fn)(void *item, const struct kvg_opt *o);

struct kvg_opt {
    const char *name;  /* NULL: an unnamed INCLUDE, or the end */
    const char *alias; /* a second name, or NULL */
    enum kvg_opt_type type;
    size_t off;
    size_t size;                /* STR, ENUM as string: the buffer; ROWS of structs: one row */
    const char *meta;           /* --help's value placeholder ("URL", "N"); NULL: by type */
    const char *help;           /* one line */
    const char *section;        /* --help's group; NULL: the previous entry's */
    double min, max;            /* numbers: the inclusive range, when min < max */
    const char *const *choices; /* ENUM */
    const struct kvg_opt *sub;  /* INCLUDE, ROWS */
    kvg_opt_parse_fn parse;     /* CUSTOM */
    kvg_opt_format_fn format;   /* CUSTOM, optional */
    kvg_opt_item_fn init;       /* ROWS of structs, optional */
    kvg_opt_item_fn check;      /* ROWS of structs, named INCLUDE; optional */
    size_t count_off;           /* ROWS of structs: the size_t row count (a CUSTOM may use it) */
    size_t max_rows;            /* ROWS of structs, MAP (0 with F_ALLOC: no bound) */
    unsigned flags;             /* KVG_OPT_F_* */
    const char *noun;           /* INCLUDE, ROWS, MAP: their keys' name in errors ("limit") */
    const char *expect;         /* ...: the valid keys as errors list them */
    kvg_opt_seen_fn seen;       /* ROWS of structs, MAP; optional */
};

#define KVG_OPT_END                                                                                \
    {                                                                                              \
        0                                                                                          \
    }
static inline int kvg__opt_end(const struct kvg_opt *o)
{
    return !o->name && o->type != KVG_OPT_INCLUDE;
}
/* Rows, maps and named includes: YAML only, no flag, nothing to emit. */
static inline int kvg__opt_yaml_only(const struct kvg_opt *o)
{
    return o->type == KVG_OPT_ROWS || o->type == KVG_OPT_MAP ||
           (o->type == KVG_OPT_INCLUDE && o->name);
}

/* Parses argv[first..argc) into obj: --name value, --name=value, list values
 * up to the next --flag. Returns 0, 1 when --help or -h is among them
 * (nothing else is parsed then), or KVG_ECONFIG / -ENOMEM with err set. */
int kvg_opt_parse_argv(const struct kvg_opt *t, void *obj, int argc, char **argv, int first,
                       char *err, size_t errlen);

/* Parses the one flag at argv[*i] (with its values) when the table has it:
 * 0 with *i on its last value, 1 when argv[*i] is not one of the table's
 * flags (for commands that parse some flags by hand), or KVG_ECONFIG. */
int kvg_opt_parse_one(const struct kvg_opt *t, void *obj, int argc, char **argv, int *i, char *err,
                      size_t errlen);

/* Loads a YAML file (its top level a mapping of the table's names) into
 * obj: scalars, sequences for lists, true/false for booleans, nested
 * mappings for named includes, lists of mappings for rows. An empty file
 * sets nothing. Errors read "path:line: key.path: what". */
int kvg_opt_load_yaml(const struct kvg_opt *t, void *obj, const char *path, char *err,
                      size_t errlen);
/* The same from text in memory; name stands for the file in errors. */
int kvg_opt_load_yaml_text(const struct kvg_opt *t, void *obj, const char *text, size_t len,
                           const char *name, char *err, size_t errlen);
/* The same with doc, a named INCLUDE standing for the whole file: its sub
 * the top-level table (at obj + off), its noun and expect for unknown
 * top-level keys ("top-level key"), its check run last (parent and item
 * both the top-level struct). An empty file with required top-level keys
 * is an error. */
int kvg_opt_load_yaml_doc(const struct kvg_opt *doc, void *obj, const char *text, size_t len,
                          const char *name, char *err, size_t errlen);

/* An unsigned integer as the tables read them: digits, '_' separators
 * anywhere but first or last (100_000). 0, or -1 with *out untouched. */
int kvg_opt_parse_u64(const char *v, uint64_t *out);

/* Prints the table's options grouped by section ("section:" lines, then
 * "  --name META  help (default: X)"), the defaults read from defaults
 * (NULL: none shown), the valid values of enumerations listed. */
void kvg_opt_help(const struct kvg_opt *t, const void *defaults, FILE *out);

/* What kvg_opt_help writes: text (the default), or roff for the man page
 * (kvgate help --man sets it before it gathers every command's --help). In
 * roff, a section is ".SS name" and an entry a tagged paragraph (.TP) with
 * the same words; each call's output stands between the lines
 * KVG_OPT_ROFF_BEGIN and KVG_OPT_ROFF_END (roff comments), so that whoever
 * gathers a command's --help tells the tables (roff already) from the text
 * printed around them (to escape with kvg_opt_roff_text). Process-wide:
 * set it from one thread, before the calls. */
enum kvg_opt_help_format { KVG_OPT_HELP_TEXT, KVG_OPT_HELP_ROFF };
void kvg_opt_help_set_format(enum kvg_opt_help_format f);
#define KVG_OPT_ROFF_BEGIN ".\\\" kvgate-options-begin"
#define KVG_OPT_ROFF_END ".\\\" kvgate-options-end"
/* Writes s escaped for roff text: '\' as \e, '-' as \- (a minus: options
 * stay what they are typed as), \& before a '.' or '\'' opening a line, a
 * break point (\:) after each ','. */
void kvg_opt_roff_text(const char *s, FILE *out);

/* Calls add(ud, arg) with "--name" and its values for each option whose
 * value in obj differs from defaults (argv for a child process: parsing
 * them onto defaults gives obj back). Rows and named includes are
 * YAML-only and skipped, as are CUSTOM entries without format. Returns 0
 * or add's first failure. */
int kvg_opt_emit(const struct kvg_opt *t, const void *obj, const void *defaults,
                 int (*add)(void *ud, const char *arg), void *ud);

/* The names (comma-separated into out, cap bytes, cut when full) of the
 * options whose values differ between a and b; a field two entries share
 * is named once. skip(ud, entry, absolute offset) != 0 leaves an entry
 * out (NULL: none). Returns how many differ. */
size_t kvg_opt_diff(const struct kvg_opt *t, const void *a, const void *b,
                    int (*skip)(void *ud, const struct kvg_opt *o, size_t off), void *ud, char *out,
                    size_t cap);

/* Copies the value of entry o from src to dst (both structs its table
 * describes): 0, or -1 for an entry whose value may own memory or is not
 * one field (lists, rows, includes, CUSTOM). */
int kvg_opt_copy(const struct kvg_opt *o, void *dst, const void *src);

/* Frees every list value the table's entries hold in obj, and the arrays
 * of F_ALLOC rows (their counts set to 0). */
void kvg_opt_free(const struct kvg_opt *t, void *obj);

/* Writes a field's value as text ("" for empty); 0, or < 0 when it has none
 * (a list, a row, a CUSTOM without format). */
int kvg__opt_format(const struct kvg_opt *o, const void *obj, char *out, size_t cap);
/* Sets one value; who names it in errors ("--port", "f.yaml:3: port"). */
int kvg__opt_set(const struct kvg_opt *o, void *obj, const char *v, size_t index, const char *who,
                 char *err, size_t errlen);
/* The entry called name (or alias; '_' and '-' alike) in t or its unnamed
 * includes; *base_off gets the include offsets to add. yaml: named
 * includes and rows count too. */
const struct kvg_opt *kvg__opt_find(const struct kvg_opt *t, const char *name, int yaml,
                                    size_t *base_off);
/* The first row of a ROWS of structs or MAP entry in obj (NULL: none yet). */
char *kvg__opt_rows(const struct kvg_opt *o, const void *obj);
/* An ENUM's or LEVEL's valid values, joined by sep. */
void kvg__opt_choices_text(const struct kvg_opt *o, const char *sep, char *out, size_t cap);
/* " (did you mean X?)" for the nearest name to name, or "" when none is close. */
void kvg__opt_suggest(const struct kvg_opt *t, const char *name, int yaml, const char *prefix,
                      char *out, size_t cap);

#endif
