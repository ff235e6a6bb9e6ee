#!/usr/bin/env python3
"""Writes the seed corpora fuzz/corpus/<target>/ from the repository's test data (run from the
repository root: python3 fuzz/make_seeds.py). Seeds are small; the fuzzers add their own finds
to a scratch copy, never to these folders (scripts/fuzz.sh)."""
import hashlib, json, os, struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")


def put(target, data, name=None):
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    name = name or hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def read(rel):
    with open(os.path.join(ROOT, rel), "rb") as f:
        return f.read()


# safetensors: small files written here, and the first bytes of a fixture (header + some data).
def safetensors(tensors, metadata=None, pad=True):
    header, blobs, off = {}, b"", 0
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(data)]}
        blobs += data
        off += len(data)
    h = json.dumps(header).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + blobs


put("safetensors_header", safetensors([("a", "F32", [2, 2], b"\0" * 16), ("b", "BF16", [3], b"\1" * 6)], {"format": "pt"}), "two_tensors")
put("safetensors_header", safetensors([("w.qweight", "I32", [1, 4], b"\2" * 16), ("w.scales", "F16", [1, 8], b"\3" * 16),
                                       ("e", "U8", [0], b"")]), "gptq_like")
put("safetensors_header", safetensors([], {"k": "v"}), "empty")
put("safetensors_header", safetensors([("x", "I64", [1], b"\0" * 8)], pad=False), "unpadded")
fx = read("tests/fixtures/text/qwen35moe-tiny-s1/bf16/model.safetensors")
(n,) = struct.unpack("<Q", fx[:8])
put("safetensors_header", fx[: 8 + n + 64], "fixture_truncated")

# config.json: the fixtures' and the real model's, one with its quantize_config.json.
for rel in ["tests/fixtures/text/qwen35moe-tiny-s1/bf16/config.json", "tests/fixtures/text/qwen35moe-tiny-s1/gptq/config.json",
            "tests/fixtures/multimodal/mm-s1-small/config.json", "tests/data/model/qwen3.6-35b-a3b/config.json"]:
    put("config_json", read(rel))
put("config_json", read("tests/fixtures/multimodal/mm-s1-small/config.json") + b"\n---quantize_config---\n" +
    read("tests/fixtures/multimodal/mm-s1-small/quantize_config.json"), "with_quantize_config")


# tokenizer.json: small byte-level BPE files (as tests/tokenizer/load_test.cc builds them).
def mini_tokenizer(extra, merges, pre="split", merges_as_pairs=False):
    vocab = {}
    mapping = byte_level_table()
    for b in range(256):
        vocab[mapping[b]] = b
    for i, e in enumerate(extra):
        vocab["".join(mapping[c] for c in e.encode())] = 256 + i
    m = [s.split(" ") for s in merges] if merges_as_pairs else merges
    pt = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\p{L}+| ?\\p{N}|\\s+|[^\\s\\p{L}\\p{N}]+"}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]}
    if pre == "bytelevel":
        pt = {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}
    return json.dumps({"version": "1.0",
                       "added_tokens": [{"id": 300, "content": "<s>", "special": True}, {"id": 301, "content": "<tag>", "special": False}],
                       "normalizer": {"type": "NFC"}, "pre_tokenizer": pt, "decoder": {"type": "ByteLevel"},
                       "model": {"type": "BPE", "ignore_merges": False, "vocab": vocab, "merges": m}}, ensure_ascii=False)


def byte_level_table():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


put("tokenizer_load", mini_tokenizer(["ab", "bc", "aa", "abc"], ["a b", "b c", "a a", "ab c"]), "bpe")
put("tokenizer_load", mini_tokenizer(["he", "ll", "hell", "hello"], ["h e", "l l", "he ll", "hell o"], "bytelevel", True), "pairs_bytelevel")
put("tokenizer_load", mini_tokenizer(["x"], []) + "\n---tokenizer_config---\n" +
    json.dumps({"added_tokens_decoder": {"302": {"content": "<|im_end|>", "special": True}}, "eos_token": "<|im_end|>"}), "with_config")

# tokenizer encode/decode: texts of the golden corpus (and their ids as 32-bit words).
cases = json.loads(read("tests/data/tokenizer/golden_corpus.json"))["cases"]
for c in cases[:: max(1, len(cases) // 24)][:24]:
    put("tokenizer_codec", c["text"][:400])
    put("tokenizer_codec", b"".join(struct.pack("<I", i) for i in c["ids"][:100]))
put("tokenizer_codec", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>", "specials")

# Jinja: the snippet goldens (template + context) and the Qwen chat cases (context only).
for s in json.loads(read("tests/data/jinja/snippet_goldens.json"))["snippets"]:
    put("jinja_template", s["template"] + "\n---context---\n" + json.dumps(s["context"], ensure_ascii=False), s["name"])
for c in json.loads(read("tests/data/jinja/qwen_chat_goldens.json"))["cases"]:
    ctx = {"messages": c["messages"], "tools": c["tools"], "add_generation_prompt": c["add_generation_prompt"], **c["kwargs"]}
    put("jinja_template", "\n---context---\n" + json.dumps(ctx, ensure_ascii=False), "qwen_" + c["name"])

# OpenAI requests: first byte even = chat, odd = completions.
weather = {"type": "function", "function": {"name": "get_weather", "description": "w", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}
chats = [
    {"model": "qwen", "messages": [{"role": "user", "content": "hi"}]},
    {"model": "qwen", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "a"}]}],
     "stream": True, "stream_options": {"include_usage": True}, "max_tokens": 16, "temperature": 0.7, "top_p": 0.9, "top_k": 20,
     "stop": ["\n"], "n": 2, "seed": 1, "logprobs": True, "top_logprobs": 2, "presence_penalty": 0.5, "logit_bias": {"5": -1}},
    {"model": "qwen", "messages": [{"role": "user", "content": "weather?"},
                                   {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                    "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
                                   {"role": "tool", "tool_call_id": "c1", "content": "sunny"}],
     "tools": [weather], "tool_choice": "auto", "chat_template_kwargs": {"enable_thinking": False}},
    {"model": "qwen", "messages": [{"role": "user", "content": "json"}], "response_format": {"type": "json_schema",
     "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}}}}},
    {"model": "qwen", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                                                                 {"type": "text", "text": "what?"}]}], "tool_choice": "required", "tools": [weather]},
    {"model": "alias", "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "<think>a</think>b"}],
     "continue_final_message": True, "add_generation_prompt": False, "structured_outputs": {"regex": "[a-z]+"}},
]
comps = [
    {"model": "qwen", "prompt": "Hello", "max_tokens": 5, "echo": True, "logprobs": 1},
    {"model": "qwen", "prompt": [[1, 2, 3], [4, 5]], "n": 2, "best_of": 2, "stop_token_ids": [7], "min_tokens": 1},
    {"model": "qwen", "prompt": ["a", "b"], "guided_choice": ["yes", "no"], "stream": True, "prompt_logprobs": 1},
    {"model": "qwen", "prompt": [1, 2], "guided_grammar": "root ::= \"a\" | \"b\"", "repetition_penalty": 1.1, "min_p": 0.1},
]
for i, b in enumerate(chats):
    put("openai_request", b"\0" + json.dumps(b).encode(), f"chat{i}")
for i, b in enumerate(comps):
    put("openai_request", b"\1" + json.dumps(b).encode(), f"completion{i}")


# Tool-call / reasoning parsers: model outputs. First byte: bit 0 schemas, bit 1 prompt ended reasoning, rest the split seed.
def call(fn, params):
    return f"<tool_call>\n<function={fn}>\n{params}</function>\n</tool_call>"


def param(n, v):
    return f"<parameter={n}>\n{v}\n</parameter>\n"


outputs = [
    "thinking about it</think>\n\nThe answer is 4.",
    "<think>\nhmm\n</think>\n\n" + call("get_weather", param("city", "Paris") + param("days", "3")),
    "Sure.\n" + call("get_weather", param("opts", "{'k': [1, 2]}") + param("ok", "true")) + "\n" + call("f", ""),
    "plan</think>" + call("get_weather", param("t", "1e999") + param("l", "[1, 2]") + param("any", "null")) + "\nDone.",
    "<tool_call>\n<function=get_weather>\n<parameter=city>\na </parameter> b\n</parameter>\n</function>\n</tool_call>",
    "text <tool_call><function=f></tool_call> more </think> é \xff",
]
for i, o in enumerate(outputs):
    for first in (1, 6):
        put("tool_reasoning_parsers", bytes([first + 4 * i]) + o.encode("utf-8", "surrogateescape") if "\xff" not in o else
            bytes([first]) + o.replace("\xff", "").encode() + b"\xff", f"out{i}_{first}")
