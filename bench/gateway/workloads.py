#!/usr/bin/env python3
"""Request bodies for bench/gateway/cost.sh, as lines "PRE<TAB>POST": the
client sends PRE + a per-request counter + POST, so no two requests are
byte-identical. Text is pseudo-English (seeded), about 4.6 characters per
Qwen3 token. Workloads:
  short   a one-line system prompt and a ~40-token question (unique)
  6k      one 6,000-token system prompt shared by all + a ~100-token question
  30k     8 conversations of ~30,000 tokens; body k of a conversation is its
          first k turns, so each request's earlier turns were seen before
  100k    ~100,000-token prompts, unique from their first bytes (no reuse)
  30k-msg the 30k bodies as Anthropic Messages requests (POST /v1/messages):
          the system message as `system`, the same turns, max_tokens 1; the
          gateway converts them to the same chat request (kvg_api_to_chat),
          so they render to the same prompts, token for token
Usage: workloads.py OUTDIR"""
import json, os, random, sys

rng = random.Random(19)
WORDS = ("the of and to in is that for it as with was on be by this are or at from have an "
         "they which one you were her all she there would their we him been has when who will "
         "more no if out so said what up its about into than them can only other new some "
         "could time these two may then do first any my now such like our over man me even "
         "most made after also did many before must through back years where much your way "
         "well down should because each just those people how too little state good very make "
         "world still own see men work long get here between both life being under never day "
         "same another know while last might us great old year off come since against go came "
         "right used take three kernel cache router engine token prefix request latency model").split()
TOK_CHARS = 4.6

def text(tokens):
    out, n = [], int(tokens * TOK_CHARS)
    size = 0
    while size < n:
        s = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18)))
        s = s[0].upper() + s[1:] + rng.choice([".", ".", ",", "?", "!", ";"]) + rng.choice([" ", " ", "\n"])
        out.append(s)
        size += len(s)
    return "".join(out).strip()

def split(msgs, where, api="chat"):
    """PRE/POST around the marker @N@ inside the body."""
    model = os.environ.get("KVG_WL_MODEL", "m")
    if api == "messages":  # Anthropic's shape: the system prompt is a member of its own
        body = json.dumps({"model": model, "system": msgs[0]["content"], "messages": msgs[1:],
                           "max_tokens": 1}, ensure_ascii=False)
    else:
        body = json.dumps({"model": model, "messages": msgs, "max_tokens": 1}, ensure_ascii=False)
    a, b = body.split("@N@")
    assert "\t" not in a and "\t" not in b
    return a + "\t" + b

def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    w = {}
    w["short"] = [split([{"role": "system", "content": "You are a helpful assistant."},
                         {"role": "user", "content": "@N@ " + text(40)}], 0) for _ in range(64)]
    sysp = text(6000)
    w["6k"] = [split([{"role": "system", "content": sysp},
                      {"role": "user", "content": "@N@ " + text(100)}], 0) for _ in range(64)]
    conv, conv_msg = [], []
    for c in range(8):
        hist = [{"role": "system", "content": text(800)}]
        for t in range(40):
            hist.append({"role": "user", "content": text(350)})
            hist.append({"role": "assistant", "content": text(350)})
        # bodies: the history up to turn k plus a new question, k covering ~26k..30k tokens
        for k in range(36, 41):
            msgs = hist[:1 + 2 * k] + [{"role": "user", "content": "@N@ " + text(60)}]
            conv.append(split(msgs, 0))
            conv_msg.append(split(msgs, 0, "messages"))
    w["30k"] = conv
    w["30k-msg"] = conv_msg
    w["100k"] = [split([{"role": "system", "content": "@N@ " + text(100000)},
                        {"role": "user", "content": text(60)}], 0) for _ in range(4)]
    for k, v in w.items():
        with open(os.path.join(out, k + ".tsv"), "w") as f:
            f.write("\n".join(v) + "\n")

main()
