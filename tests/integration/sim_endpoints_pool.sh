# kvgate sim's pooling, score/rerank and audio endpoints (vLLM's shapes),
# SGLang's native /generate and llama.cpp's routes on the wire: usage
# counted exactly (against `kvgate tokenize`), every input run by the engine
# (its finished count grows), batches and audio files bounded, a multipart
# body cut in the middle refused, each flavor's own 404.
. "$(dirname "$0")/lib.sh"
P1=$(free_port); P2=$(free_port); P3=$(free_port)
start_sim "$P1" --model m --speed 200 --embedding-dim 8 --max-batch 16 --max-audio-filesize-mb 1 || exit 1
S=http://127.0.0.1:$P1
post() { curl -s -o "$TMP/r" -w '%{http_code}' "$S$1" -H 'content-type: application/json' -d "$2"; }
# nids TEXT: a completion prompt's tokens (with BOS, as vLLM adds them).
nids() { printf '%s' "$1" | "$KVG_BIN" tokenize --tokenizer builtin:bytes --add-special-tokens | json_get /dev/stdin 'len(j["ids"])'; }
finished() { curl -s "$1/debug/ranks" | json_get /dev/stdin 'sum(r["finished"] for r in j["ranks"])'; }
py() { /usr/bin/python3 - "$@"; }

# ---- Embeddings: one engine request per input, vectors of --embedding-dim,
# the same text the same vector, usage the inputs' tokens.
before=$(finished "$S")
check "embeddings: 200" [ "$(post /v1/embeddings '{"model":"m","input":["hello","world!","hello"]}')" = 200 ]
check "embeddings: shape, vectors, usage" py "$TMP/r" "$(($(nids hello) * 2 + $(nids 'world!')))" <<'PY'
import json, math, sys
j = json.load(open(sys.argv[1])); d = j["data"]
assert j["object"] == "list" and j["id"].startswith("embd-") and j["model"] == "m"
assert [x["index"] for x in d] == [0, 1, 2] and all(x["object"] == "embedding" for x in d)
assert all(len(x["embedding"]) == 8 for x in d)
assert abs(math.sqrt(sum(v * v for v in d[0]["embedding"])) - 1) < 1e-5
assert d[0]["embedding"] == d[2]["embedding"] != d[1]["embedding"]
assert j["usage"] == {"prompt_tokens": int(sys.argv[2]), "total_tokens": int(sys.argv[2]),
                      "completion_tokens": 0, "prompt_tokens_details": None}, j["usage"]
PY
check "embeddings: each input ran in the engine" [ "$(finished "$S")" -ge $((before + 3)) ]
post /v1/embeddings '{"model":"m","input":"hello"}' >/dev/null; cp "$TMP/r" "$TMP/f"
post /v1/embeddings '{"model":"m","input":"hello","encoding_format":"base64"}' >/dev/null
check "embeddings: base64 is the float32 vector" py "$TMP/f" "$TMP/r" <<'PY'
import base64, json, struct, sys
f = json.load(open(sys.argv[1]))["data"][0]["embedding"]
b = json.load(open(sys.argv[2]))["data"][0]["embedding"]
v = struct.unpack("<8f", base64.b64decode(b))
assert all(abs(x - y) < 1e-6 for x, y in zip(f, v)), (f, v)
PY
check "embeddings: token ids and chat messages" [ "$(post /v1/embeddings '{"model":"m","input":[[1,2,3],[4,5]]}'; json_get "$TMP/r" 'j["usage"]["prompt_tokens"]')$(post /v1/embeddings '{"model":"m","messages":[{"role":"user","content":"hi"}]}'; json_get "$TMP/r" 'len(j["data"])')" = 20052001 ]
check "a batch past --max-batch: 400" [ "$(post /v1/embeddings "{\"model\":\"m\",\"input\":$(/usr/bin/python3 -c 'print(["x"]*17)' | tr "'" '"')}")" = 400 ]
check "  saying why" grep -q 'at most 16' "$TMP/r"
/usr/bin/python3 -c 'import json; print(json.dumps({"model": "m", "input": ["x"] * 200000}))' >"$TMP/huge"
check "a huge batch: 400, no crash" [ "$(curl -s -o "$TMP/r" -w '%{http_code}' "$S/v1/embeddings" --data-binary @"$TMP/huge")" = 400 ]
long=$(/usr/bin/python3 -c 'print("a" * 5000)')
check "an input past the context: 400" [ "$(post /v1/embeddings "{\"model\":\"m\",\"input\":\"$long\"}")" = 400 ]
check "  vLLM's words" grep -q "in the input for embedding generation" "$TMP/r"
check "dimensions other than the model's: 400" [ "$(post /v1/embeddings '{"model":"m","input":"x","dimensions":4}')" = 400 ]
check "embeddings, unknown model: 404" [ "$(post /v1/embeddings '{"model":"zz","input":"x"}')" = 404 ]

# ---- /pooling and /classify.
check "pooling: data is the vector" [ "$(post /pooling '{"model":"m","input":"hello"}'; json_get "$TMP/r" '(j["id"][:5], j["data"][0]["object"], len(j["data"][0]["data"]))')" = "200('pool-', 'pooling', 8)" ]
check "classify: two labelled classes" py "$(post /classify '{"model":"m","input":["good","bad"]}' >/dev/null; echo "$TMP/r")" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["id"].startswith("classify-") and len(j["data"]) == 2
for d in j["data"]:
    assert d["num_classes"] == 2 and abs(sum(d["probs"]) - 1) < 1e-9
    assert d["label"] == "LABEL_%d" % (d["probs"][1] > d["probs"][0])
PY

# ---- Score and rerank: pairs as cross-encoder prompts, sorted, top_n.
check "score 1:N" [ "$(post /score '{"model":"m","text_1":"hello","text_2":["hello","bye"]}'; json_get "$TMP/r" '(len(j["data"]), j["data"][0]["score"] > j["data"][1]["score"], j["usage"]["prompt_tokens"])')" = "200(2, True, $(($(nids hello) * 3 + $(nids bye))))" ]
check "score N:M mismatch: 400" [ "$(post /v1/score '{"model":"m","data_1":["a","b"],"data_2":["a","b","c"]}')" = 400 ]
check "  vLLM's words" grep -q "Input lengths must be either 1:1, 1:N or N:N" "$TMP/r"
for path in /rerank /v1/rerank /v2/rerank; do
  check "rerank $path: sorted, top_n, documents" py "$(post "$path" '{"model":"m","query":"hello world","documents":["bye","hello world","hello"],"top_n":2}' >/dev/null; echo "$TMP/r")" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); r = j["results"]
assert j["id"].startswith("rerank-") and list(j) == ["id", "model", "usage", "results"]
assert len(r) == 2 and r[0]["index"] == 1 and r[0]["document"] == {"text": "hello world", "multi_modal": None}
assert r[0]["relevance_score"] >= r[1]["relevance_score"]
assert j["usage"]["prompt_tokens"] == j["usage"]["total_tokens"] > 0
PY
done
check "rerank without documents: 400" [ "$(post /rerank '{"model":"m","query":"q"}')" = 400 ]

# ---- Audio: multipart, duration from the WAV header, usage as vLLM reports.
/usr/bin/python3 - "$TMP/a.wav" "$TMP/big.wav" <<'PY'
import struct, sys
def wav(path, seconds):
    data = b"\x01\x02" * (16000 * seconds)
    fmt = struct.pack("<IHHIIHH", 16, 1, 1, 16000, 32000, 2, 16)
    open(path, "wb").write(b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + fmt +
                           b"data" + struct.pack("<I", len(data)) + data)
wav(sys.argv[1], 2); wav(sys.argv[2], 40)
PY
check "transcription: 200" [ "$(curl -s -o "$TMP/r" -w '%{http_code}' "$S/v1/audio/transcriptions" -F file=@"$TMP/a.wav" -F model=m)" = 200 ]
check "  text and usage seconds" [ "$(json_get "$TMP/r" '(len(j["text"]) == 6, j["usage"])')" = "(True, {'type': 'duration', 'seconds': 2})" ]
check "translation: text only" [ "$(curl -s "$S/v1/audio/translations" -F file=@"$TMP/a.wav" | json_get /dev/stdin 'sorted(j)')" = "['text']" ]
curl -sN "$S/v1/audio/transcriptions" -F file=@"$TMP/a.wav" -F stream=true -F stream_include_usage=true >"$TMP/as"
check "transcription stream: chunks, usage, [DONE]" py "$TMP/as" <<'PY'
import json, sys
blocks = open(sys.argv[1]).read().strip().split("\n\n")
assert blocks[-1] == "data: [DONE]"
ch = [json.loads(b[6:]) for b in blocks[:-1]]
deltas = [c for c in ch if c["choices"]]
assert all(c["object"] == "transcription.chunk" and c["id"].startswith("transcribe-") for c in ch)
assert ch[-1]["choices"] == [] and ch[-1]["usage"]["completion_tokens"] == len(deltas) == 6
assert deltas[-1]["choices"][0]["finish_reason"] == "length"
PY
check "a file past --max-audio-filesize-mb: 400" [ "$(curl -s -o "$TMP/r" -w '%{http_code}' "$S/v1/audio/transcriptions" -F file=@"$TMP/big.wav")" = 400 ]
check "  vLLM's words" grep -q 'Maximum file size exceeded' "$TMP/r"
check "no file: 400" [ "$(curl -s -o /dev/null -w '%{http_code}' "$S/v1/audio/transcriptions" -F model=m)" = 400 ]
check "file as a plain field: 422" [ "$(curl -s -o /dev/null -w '%{http_code}' "$S/v1/audio/transcriptions" -F file=abc)" = 422 ]
check "response_format vtt: 400" [ "$(curl -s -o /dev/null -w '%{http_code}' "$S/v1/audio/transcriptions" -F file=@"$TMP/a.wav" -F response_format=vtt)" = 400 ]
check "stream options without stream: 400" [ "$(curl -s -o /dev/null -w '%{http_code}' "$S/v1/audio/transcriptions" -F file=@"$TMP/a.wav" -F stream_include_usage=true)" = 400 ]
printf -- '--B\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\nRIFFxxxxWAVE' >"$TMP/cut"
check "a multipart body cut in the middle: 400" [ "$(curl -s -o "$TMP/r" -w '%{http_code}' "$S/v1/audio/transcriptions" -H 'content-type: multipart/form-data; boundary=B' --data-binary @"$TMP/cut")" = 400 ]
check "  saying so" grep -q 'ends before its closing boundary' "$TMP/r"
check "not multipart: 400" [ "$(post /v1/audio/transcriptions '{"file":"x"}')" = 400 ]
check "the sim is still up" [ "$(curl -s -o /dev/null -w '%{http_code}' "$S/health")" = 200 ]

# ---- SGLang's /generate: meta_info usage, cumulative stream, [DONE].
start_sim "$P2" --model m --speed 200 --flavor sglang || exit 1
G=http://127.0.0.1:$P2
curl -s "$G/generate" -d '{"text":"hello","sampling_params":{"max_new_tokens":4,"ignore_eos":true}}' >"$TMP/g"
check "generate: text, output_ids, meta_info" py "$TMP/g" "$(nids hello)" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); m = j["meta_info"]
assert list(j) == ["text", "output_ids", "meta_info"] and len(j["output_ids"]) == 4 == len(j["text"])
assert m["prompt_tokens"] == int(sys.argv[2]) and m["completion_tokens"] == 4
assert m["finish_reason"] == {"type": "length", "length": 4} and m["e2e_latency"] >= 0
assert "cached_tokens" in m and len(m["id"]) == 32
PY
curl -sN "$G/generate" -d '{"input_ids":[104,105],"rid":"r1","stream":true,"sampling_params":{"max_new_tokens":3,"ignore_eos":true}}' >"$TMP/gs"
check "generate stream: cumulative chunks, [DONE]" py "$TMP/gs" <<'PY'
import json, sys
blocks = open(sys.argv[1]).read().strip().split("\n\n")
assert blocks[-1] == "data: [DONE]"
ch = [json.loads(b[6:]) for b in blocks[:-1]]
assert len(ch) == 3 and all(c["meta_info"]["id"] == "r1" for c in ch)
assert [len(c["output_ids"]) for c in ch] == [1, 2, 3] and ch[-1]["text"].startswith(ch[0]["text"])
assert [c["meta_info"]["finish_reason"] for c in ch[:2]] == [None, None]
assert ch[-1]["meta_info"]["prompt_tokens"] == 2 and "e2e_latency" in ch[-1]["meta_info"]
PY
check "generate: no prompt, SGLang's 400" [ "$(curl -s -w '%{http_code}' "$G/generate" -d '{}')" = '{"error":{"message":"Either text, input_ids or input_embeds should be provided."}}400' ]
check "generate: past the context, SGLang's words" [ "$(curl -s "$G/generate" -d '{"text":"x","sampling_params":{"max_new_tokens":100000}}' | grep -c "exceeds the model's maximum context length")" = 1 ]
check "sglang: no /v1/responses" [ "$(curl -s -o /dev/null -w '%{http_code}' "$G/v1/responses" -d '{}')" = 404 ]
check "sglang: /v1/embeddings" [ "$(curl -s "$G/v1/embeddings" -d '{"input":"x"}' | json_get /dev/stdin 'list(j)')" = "['model', 'object', 'data', 'usage']" ]

# ---- llama.cpp's routes: its shapes (nlohmann's sorted keys), its 404.
start_sim "$P3" --model m --speed 200 --flavor llamacpp --embedding-dim 4 || exit 1
L=http://127.0.0.1:$P3
check "llamacpp tokenize" [ "$(curl -s "$L/tokenize" -d '{"content":"hi"}')" = '{"tokens":[104,105]}' ]
check "llamacpp tokenize with pieces" [ "$(curl -s "$L/tokenize" -d '{"content":"hi","with_pieces":true,"add_special":true}')" = '{"tokens":[{"id":256,"piece":"<|bos|>"},{"id":104,"piece":"h"},{"id":105,"piece":"i"}]}' ]
check "llamacpp detokenize" [ "$(curl -s "$L/detokenize" -d '{"tokens":[104,105]}')" = '{"content":"hi"}' ]
check "llamacpp embeddings" [ "$(curl -s "$L/v1/embeddings" -d '{"input":["a","b"]}' | json_get /dev/stdin '(list(j), len(j["data"][1]["embedding"]), j["usage"])')" = "(['data', 'model', 'object', 'usage'], 4, {'prompt_tokens': 4, 'total_tokens': 4})" ]
check "llamacpp rerank" [ "$(curl -s "$L/v1/rerank" -d '{"query":"hi","documents":["x","hi"],"top_n":1}' | json_get /dev/stdin '(list(j), j["results"][0]["index"])')" = "(['model', 'object', 'results', 'usage'], 1)" ]
check "llamacpp: no /v1/responses, its own 404" [ "$(curl -s -w '%{http_code}' "$L/v1/responses" -d '{}')" = '{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}404' ]
finish
