#!/usr/bin/env python3
"""Golden outputs of the Python primitives the qwen3_coder tool parser relies on
(json.loads, ast.literal_eval, int(), float(), json.dumps(ensure_ascii=False)), for
tests/chat/py_value_test.cc. Run: /usr/bin/python3 tools/gen_chat_py_golden.py"""
import ast, json, os, warnings

warnings.simplefilter("ignore")
CASES = [
    "123", "-7", "+5", " 42 ", "1_000", "1__0", "_1", "007", "0", "-0", "00", "12345678901234567890123",
    "1.5", "2.0", "-0.0", ".5", "5.", "1e5", "1E-5", "1e400", "1e16", "1e15", "123456789.123",
    "0.0001", "0.00001", "nan", "inf", "-Infinity", "1_0.5", "0x1F", "0o17", "0b101", "0xffffffffffffffffffff",
    "true", "True", "false", "False", "null", "None", "none",
    '"quoted"', "'single'", "'''triple'''", 'r"raw\\n"', "b'bytes'", "u'uni'", "'a' 'b'", "'a' b'b'",
    "'esc\\t\\x41\\u00e9\\101'", "'unknown \\d escape'", "f'x'",
    "[1, 2, 3]", "[1, 'two', 3.0, None, True]", "(1, 2)", "(1,)", "()", "1, 2", "[]", "{}",
    '{"a": 1, "b": [1, 2]}', "{'a': 1, 'b': {'c': None}}", "{1: 'x', 2.5: 'y', True: 'z', None: 'n'}",
    "{'a': 1, 'a': 2}", "{1, 2}", "set()", "{(1, 2): 3}", "{[1]: 2}", "1+2j", "3j", "-1.5",
    "- 4", "--1", "[1, 2,]", "[\n  1,\n  2\n]", "\n[1]", "  [1]", "[1] # comment", "[1]\n",
    "hello world", "", " ", "{'k': 'v'}", '"{\'k\': \'v\'}"', '{"nested": {"deep": [1, {"x": "y"}]}}',
    '{"u": "\\u00e9\\ud83d\\ude00"}', '{"ctl": "a\\u0001b"}', '"tab\\tnew\\nline"', "[1, 2] extra",
    '{"a": NaN, "b": Infinity}', "[1.0, 1e-07, 1e+22, 123e-2]", "...", "{'a': [1, (2, 3)]}",
    "'caf\u00e9 \u4f60\u597d'", "[\"\u4f60\u597d\", \"\\\\\"]", "{\"a\":1,\"a\":2}", "[01]", "1.5.5",
]


def attempt(f, v):
    try:
        text = json.dumps(f(v), ensure_ascii=False)
    except Exception as e:  # noqa: BLE001 - the class of failure is the point
        return {"error": type(e).__name__}
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return {"skip": "lone surrogate"}  # not representable in UTF-8 output
    try:
        return {"ok": text}
    except Exception as e:  # noqa: BLE001 - the class of failure is the point
        return {"error": type(e).__name__}


out = []
for c in CASES:
    out.append({
        "input": c,
        "json_loads": attempt(json.loads, c),
        "literal_eval": attempt(ast.literal_eval, c),
        "int": attempt(int, c),
        "float": attempt(lambda v: repr(float(v)), c),
    })
path = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "chat", "py_golden.json")
with open(path, "w", encoding="utf-8") as f:
    json.dump(out, f, ensure_ascii=False, indent=1)
print(f"wrote {len(out)} cases to {os.path.normpath(path)}")
