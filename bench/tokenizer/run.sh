#!/usr/bin/env bash
# Tokenizer benchmark: kvgate vs HuggingFace tokenizers vs gpt-tokenizer (and
# tiktoken) on the same 1 MB English and 1 MB code corpora, Qwen3 and o200k,
# single thread, in one run; Qwen3 load time. Writes
# bench/results/tokenizer.md (keeping the chat-template section that another
# benchmark appends after its marker).
#   bash bench/tokenizer/run.sh
# Needs the npm test tools (scripts/install-deps.sh) and jargon-text. Not a
# test: the figures depend on the machine; compare only within one run.
set -euo pipefail
cd "$(dirname "$0")/../.."
make -j2 build/release/bench/tokenizer/tok_bench >/dev/null
tmp=$(mktemp -d /tmp/kvg-tokbench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# 1 MB of each, cut at a UTF-8 boundary; code from the headers that are UTF-8.
python3 - "$tmp" <<'PY'
import glob, gzip, sys
out = sys.argv[1]
def cut(b, n=1_000_000):
    b = b[:n]
    while b and (b[-1] & 0xC0) == 0x80: b = b[:-1]
    if b and b[-1] >= 0xC0: b = b[:-1]
    return b
open(out + "/english.txt", "wb").write(cut(gzip.open("/usr/share/doc/jargon-text/jargon.txt.gz").read()))
code = bytearray()
for f in sorted(glob.glob("/usr/include/*.h")):
    b = open(f, "rb").read()
    try: b.decode("utf-8")
    except UnicodeDecodeError: continue
    code += b
    if len(code) > 1_100_000: break
open(out + "/code.txt", "wb").write(cut(bytes(code)))
PY
node bench/tokenizer/bench.mjs "$tmp/english.txt" "$tmp/code.txt" "bash bench/tokenizer/run.sh"
