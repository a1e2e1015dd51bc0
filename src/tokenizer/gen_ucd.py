#!/usr/bin/env python3
"""Generates src/tokenizer/tok_ucd.c, the Unicode tables the tokenizer needs,
from the Unicode Character Database as Debian packages it (unicode-data:
/usr/share/unicode/*.txt).

    apt-get install unicode-data
    python3 src/tokenizer/gen_ucd.py > src/tokenizer/tok_ucd.c
    clang-format -i src/tokenizer/tok_ucd.c

Why each table, and which Unicode version it must follow:
- Normalization (canonical combining class, canonical decompositions,
  composition exclusions) is restricted to code points assigned in Unicode
  9.0 or earlier: HuggingFace tokenizers' NFC/NFD come from the crate
  unicode-normalization-alignments 0.1.12, whose tables are Unicode 9.0.
  Normalization data of an assigned code point never changes (Unicode's
  stability policy), so "the current database, filtered by Age <= 9.0" is
  exactly the 9.0 tables.
- White_Space and the word class (\\w of Rust's regex crate: Alphabetic, marks,
  decimal digits, connector punctuation, Join_Control) follow the current
  database: tokenizers matches added tokens' lstrip/rstrip/single_word with
  Rust regexes built on recent Unicode.
- Lowercase mappings (the Lowercase normalizer: Rust's char::to_lowercase) are
  the simple mappings of UnicodeData.txt; the single unconditional multi-char
  lowercase mapping (U+0130) is handled in code.
- General categories of the code points assigned in Unicode 15.0: Debian's
  PCRE2 (10.42) has Unicode 14 tables while HF's Oniguruma has newer ones, so
  the Split regex translation adds these to \\p{..} classes. (Oniguruma in
  HF tokenizers 0.22 knows Unicode 16.0; Debian 12 ships the 15.0 database,
  so 15.1 / 16.0 additions stay a known gap.)
"""
import os
import sys

UCD = os.environ.get("UCD_DIR", "/usr/share/unicode")
MAX_AGE = (9, 0)


def ranges_file(name):
    """Yields (first, last, value, rest) for each data line of a UCD file."""
    with open(os.path.join(UCD, name), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = [x.strip() for x in line.split(";")]
            cps = fields[0].split("..")
            first = int(cps[0], 16)
            last = int(cps[-1], 16)
            yield first, last, fields[1] if len(fields) > 1 else "", fields[2:]


def load_unicode_data():
    """Returns {cp: fields} with the <..., First>/<..., Last> ranges expanded."""
    out = {}
    pending = None
    with open(os.path.join(UCD, "UnicodeData.txt"), encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split(";")
            cp = int(fields[0], 16)
            name = fields[1]
            if name.endswith(", First>"):
                pending = cp
                continue
            if name.endswith(", Last>"):
                for c in range(pending, cp + 1):
                    out[c] = fields
                pending = None
                continue
            out[cp] = fields
    return out


def with_age(pred):
    ok = set()
    for first, last, age, _ in ranges_file("DerivedAge.txt"):
        major, minor = (int(x) for x in age.split("."))
        if pred((major, minor)):
            ok.update(range(first, last + 1))
    return ok


def old_enough():
    return with_age(lambda a: a <= MAX_AGE)


def to_ranges(cps):
    out = []
    for c in sorted(cps):
        if out and out[-1][1] + 1 == c:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def emit_array(name, ctype, values, comment):
    print("/* %s */" % comment)
    print("const %s %s[] = {" % (ctype, name))
    line = "   "
    for v in values:
        item = " %d," % v
        if len(line) + len(item) > 98:
            print(line)
            line = "   "
        line += item
    if line.strip():
        print(line)
    print("};")
    print("const size_t %s_len = %d;\n" % (name, len(values)))


def main():
    ud = load_unicode_data()
    age_ok = old_enough()

    # Canonical combining classes (Unicode <= 9.0), as (first, last, ccc) runs.
    ccc_runs = []
    for cp in sorted(ud):
        if cp not in age_ok:
            continue
        ccc = int(ud[cp][3])
        if ccc == 0:
            continue
        if ccc_runs and ccc_runs[-1][1] + 1 == cp and ccc_runs[-1][2] == ccc:
            ccc_runs[-1][1] = cp
        else:
            ccc_runs.append([cp, cp, ccc])

    # Full composition exclusions (singletons, non-starter decompositions and
    # the explicit list): a decomposition so marked is never recomposed.
    excluded = set()
    for first, last, prop, _ in ranges_file("DerivedNormalizationProps.txt"):
        if prop == "Full_Composition_Exclusion":
            excluded.update(range(first, last + 1))

    # Canonical decompositions (one level; <= 2 code points), Unicode <= 9.0.
    decomp = []
    for cp in sorted(ud):
        if cp not in age_ok:
            continue
        d = ud[cp][5]
        if not d or d.startswith("<"):
            continue
        parts = [int(x, 16) for x in d.split()]
        assert 1 <= len(parts) <= 2, (hex(cp), d)
        flag = 1 if cp in excluded else 0
        decomp += [cp | (flag << 31), parts[0], parts[1] if len(parts) == 2 else 0]

    white = set()
    join_control = set()
    for first, last, prop, _ in ranges_file("PropList.txt"):
        if prop == "White_Space":
            white.update(range(first, last + 1))
        elif prop == "Join_Control":
            join_control.update(range(first, last + 1))
    alpha = set()
    for first, last, prop, _ in ranges_file("DerivedCoreProperties.txt"):
        if prop == "Alphabetic":
            alpha.update(range(first, last + 1))
    word = set(alpha) | join_control
    for cp, f in ud.items():
        if f[2] in ("Mn", "Mc", "Me", "Nd", "Pc"):
            word.add(cp)

    # Simple lowercase mappings, as runs (first, last, stride, delta): most
    # scripts map A..Z style blocks (stride 1) or alternating pairs (stride 2).
    lower = sorted((cp, int(f[13], 16)) for cp, f in ud.items() if f[13])
    runs = []
    for cp, lc in lower:
        delta = lc - cp
        if runs:
            first, last, stride, d = runs[-1]
            if d == delta and (stride == 0 or cp - last == stride) and cp - last in (1, 2):
                runs[-1] = [first, cp, cp - last, d]
                continue
        runs.append([cp, cp, 0, delta])
    lower_flat = []
    for first, last, stride, d in runs:
        lower_flat += [first, last, stride, d & 0xFFFFFFFF]

    print("/* GENERATED by src/tokenizer/gen_ucd.py from Debian's unicode-data")
    print(" * (Unicode Character Database) -- do not edit; rerun the generator.")
    print(" * See the generator for what each table is and which Unicode version")
    print(" * it follows. Lookups are in tok_unicode.c. */")
    print('#include "tokenizer/tok_impl.h"\n')
    print("/* Dense data (decimal code points), one generator-formatted block. */")
    print("// clang-format off")
    flat = []
    for a, b, c in ccc_runs:
        flat += [a, b, c]
    emit_array("kvg__tok_ucd_ccc", "uint32_t", flat,
               "Canonical combining class runs (Unicode <= 9.0): first, last, class.")
    emit_array("kvg__tok_ucd_decomp", "uint32_t", decomp,
               "Canonical decompositions (Unicode <= 9.0), sorted: code point "
               "(bit 31: composition-excluded), first, second (0 if singleton).")
    flat = []
    for a, b in to_ranges(white):
        flat += [a, b]
    emit_array("kvg__tok_ucd_space", "uint32_t", flat, "White_Space ranges: first, last.")
    flat = []
    for a, b in to_ranges(word):
        flat += [a, b]
    emit_array("kvg__tok_ucd_word", "uint32_t", flat,
               "Word characters (Rust regex \\w) ranges: first, last.")
    emit_array("kvg__tok_ucd_lower", "uint32_t", lower_flat,
               "Simple lowercase runs: first, last, stride (0: single), delta (mod 2^32).")
    new = sorted(with_age(lambda a: a == (15, 0)))
    runs = []
    for cp in new:
        gc = ud[cp][2] if cp in ud else "Cn"
        code = (ord(gc[0]) << 8) | ord(gc[1])
        if runs and runs[-1][1] + 1 == cp and runs[-1][2] == code:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp, code])
    flat = []
    for a, b, c in runs:
        flat += [a, b, c]
    emit_array("kvg__tok_ucd_age15", "uint32_t", flat,
               "Code points new in Unicode 15.0: first, last, general category "
               "(two ASCII letters, first << 8 | second).")
    print("// clang-format on")


if __name__ == "__main__":
    sys.exit(main())
