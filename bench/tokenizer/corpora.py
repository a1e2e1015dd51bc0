#!/usr/bin/env python3
"""The tokenizer benchmarks' corpora: 1 MB of English (the Jargon File) and
1 MB of code (/usr/include headers that are UTF-8), each cut at a UTF-8
boundary, written as OUTDIR/english.txt and OUTDIR/code.txt.
Usage: corpora.py OUTDIR"""
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
