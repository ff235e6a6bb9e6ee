#!/usr/bin/python3
"""Golden outputs for qinfer's Jinja engine, rendered with real Jinja2 in the
environment transformers' apply_chat_template uses:
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
extensions=[AssistantTracker, loopcontrols]), tojson = json.dumps(ensure_ascii=False, ...),
raise_exception, strftime_now; render(messages=, tools=, documents=None,
add_generation_prompt=, **kwargs).

Writes
  tests/data/jinja/qwen_chat_goldens.json  conversations x both shipped Qwen templates
  tests/data/jinja/snippet_goldens.json    small templates covering the expression language

Run:  /usr/bin/python3 tools/jinja_golden/make_golden.py   (from the repo root)
"""
import copy
import json
import os
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "jinja")

TEMPLATES = {
    "qwen3.5": "assets/tokenizer/qwen3.5/chat_template.jinja",
    "qwen3.6": "tests/data/jinja/chat_template.qwen3.6-derived.jinja",
}


class AssistantTracker(Extension):
    # {% generation %}...{% endgeneration %} renders its body unchanged when not tracking.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, context):
    try:
        return {"output": env.from_string(source).render(**copy.deepcopy(context))}
    except jinja2.exceptions.TemplateSyntaxError as e:
        return {"error": "syntax", "message": e.message, "line": e.lineno}
    except jinja2.exceptions.TemplateError as e:
        kind = "raised" if type(e) is jinja2.exceptions.TemplateError else type(e).__name__
        return {"error": kind, "message": str(e)}
    except Exception as e:  # noqa: BLE001 - Python errors inside the template (TypeError, ...)
        return {"error": type(e).__name__, "message": str(e)}


# ---------------------------------------------------------------------------
# Conversations for the Qwen templates

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Get current weather",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                          "required": ["city"]}}}
SEARCH = {"type": "function", "function": {"name": "web_search", "description": "Suche im Netz — 検索 🔎",
          "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "what to \"find\"\n"},
                                                          "limit": {"type": "integer", "default": 5},
                                                          "filters": {"type": "array", "items": {"type": "string"}}},
                         "required": ["query"]}, "strict": None}}


def call(name, args, wrap=True, cid=None):
    fn = {"name": name, "arguments": args}
    if not wrap:
        return fn
    c = {"id": cid or "call_" + name, "type": "function", "function": fn}
    return c


def conversations():
    C = []

    def add(name, messages, tools=None, add_generation_prompt=True, **kwargs):
        C.append({"name": name, "messages": messages, "tools": tools,
                  "add_generation_prompt": add_generation_prompt, "kwargs": kwargs})

    sys_msg = {"role": "system", "content": "You are helpful."}
    add("single_user", [{"role": "user", "content": "Hello!"}])
    add("system_user", [sys_msg, {"role": "user", "content": "Hi"}])
    add("no_generation_prompt", [sys_msg, {"role": "user", "content": "Hi"}], add_generation_prompt=False)
    add("thinking_disabled", [sys_msg, {"role": "user", "content": "Hi"}], enable_thinking=False)
    add("thinking_enabled_explicit", [{"role": "user", "content": "Hi"}], enable_thinking=True)
    add("multi_turn", [sys_msg, {"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"},
                       {"role": "user", "content": "Q2"}, {"role": "assistant", "content": "A2"},
                       {"role": "user", "content": "Q3"}])
    add("spec_example_a", [sys_msg, {"role": "user", "content": "Q1"},
                           {"role": "assistant", "content": "A1", "reasoning_content": "R1"},
                           {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Describe."}]}])
    add("spec_example_a_preserve", [sys_msg, {"role": "user", "content": "Q1"},
                                    {"role": "assistant", "content": "A1", "reasoning_content": "R1"},
                                    {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Describe."}]}],
        preserve_thinking=True)
    add("spec_example_a_no_think", [sys_msg, {"role": "user", "content": "Q1"},
                                    {"role": "assistant", "content": "A1", "reasoning_content": "R1"},
                                    {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Describe."}]}],
        enable_thinking=False)
    add("spec_example_b", [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"},
                           {"role": "assistant", "content": "", "reasoning_content": "Need the tool.",
                            "tool_calls": [call("get_weather", {"city": "Paris", "days": 2})]},
                           {"role": "tool", "tool_call_id": "call_get_weather", "content": "{\"temp\": 21}"}],
        tools=[WEATHER])
    add("reasoning_after_last_query", [{"role": "user", "content": "Think"},
                                       {"role": "assistant", "content": "Done.", "reasoning_content": "  step 1\nstep 2  "}],
        add_generation_prompt=False)
    add("inline_think_tags", [{"role": "user", "content": "Q"},
                              {"role": "assistant", "content": "<think>\nhidden\n</think>\n\nvisible"},
                              {"role": "user", "content": "Q2"}, {"role": "assistant", "content": "<think>\nr2\n</think>\n\nA2"}],
        add_generation_prompt=False)
    add("inline_think_no_open_tag", [{"role": "user", "content": "Q"},
                                     {"role": "assistant", "content": "just reasoning</think>answer"}])
    add("tools_with_system", [{"role": "system", "content": "  Sys prompt.  "}, {"role": "user", "content": "hi"}],
        tools=[WEATHER, SEARCH])
    add("tools_no_system", [{"role": "user", "content": "hi"}], tools=[SEARCH])
    add("tools_empty_system", [{"role": "system", "content": "   "}, {"role": "user", "content": "hi"}], tools=[WEATHER])
    add("tools_empty_list", [{"role": "user", "content": "hi"}], tools=[])
    add("tool_call_no_content", [{"role": "user", "content": "Weather?"},
                                 {"role": "assistant", "content": None,
                                  "tool_calls": [call("get_weather", {"city": "Oslo"})]},
                                 {"role": "tool", "content": "sunny"}], tools=[WEATHER])
    add("tool_call_with_content", [{"role": "user", "content": "Weather?"},
                                   {"role": "assistant", "content": "Let me check.",
                                    "tool_calls": [call("get_weather", {"city": "Oslo"})]},
                                   {"role": "tool", "content": "sunny"},
                                   {"role": "assistant", "content": "It is sunny."},
                                   {"role": "user", "content": "Thanks"}], tools=[WEATHER])
    add("parallel_calls_consecutive_tools", [{"role": "user", "content": "Compare"},
                                             {"role": "assistant", "content": "",
                                              "tool_calls": [call("get_weather", {"city": "A"}, cid="1"),
                                                             call("get_weather", {"city": "B"}, cid="2"),
                                                             call("web_search", {"query": "x"}, cid="3")]},
                                             {"role": "tool", "tool_call_id": "1", "content": "r1"},
                                             {"role": "tool", "tool_call_id": "2", "content": "r2"},
                                             {"role": "tool", "tool_call_id": "3", "content": "r3"}],
        tools=[WEATHER, SEARCH])
    add("tools_then_user_again", [{"role": "user", "content": "Compare"},
                                  {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "A"})]},
                                  {"role": "tool", "content": "r1"}, {"role": "tool", "content": "r2"},
                                  {"role": "assistant", "content": "Both fine."},
                                  {"role": "user", "content": "ok"}], tools=[WEATHER], enable_thinking=False)
    add("call_without_function_wrapper", [{"role": "user", "content": "go"},
                                          {"role": "assistant", "content": "",
                                           "tool_calls": [call("get_weather", {"city": "Rome"}, wrap=False)]}],
        add_generation_prompt=False)
    add("argument_types", [{"role": "user", "content": "types"},
                           {"role": "assistant", "content": "",
                            "tool_calls": [call("f", {"s": "str", "n": 3, "f": 2.5, "big": 1e16, "small": 1e-05,
                                                      "b": True, "b2": False, "z": None, "o": {"k": [1, 2]},
                                                      "l": ["a", "ü"], "u": "naïve — 日本", "e": "", "neg": -7})]},
                           {"role": "tool", "content": "ok"}])
    add("string_arguments_error", [{"role": "user", "content": "go"},
                                   {"role": "assistant", "content": "",
                                    "tool_calls": [call("get_weather", "{\"city\": \"Paris\"}")]}])
    add("call_without_arguments", [{"role": "user", "content": "go"},
                                   {"role": "assistant", "content": "",
                                    "tool_calls": [{"type": "function", "function": {"name": "noop"}}]}])
    add("multi_step_tool_response_in_user", [{"role": "user", "content": "real question"},
                                             {"role": "assistant", "content": "", "reasoning_content": "r",
                                              "tool_calls": [call("get_weather", {"city": "A"})]},
                                             {"role": "user", "content": "<tool_response>\nx\n</tool_response>"}])
    add("images_and_text", [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                                                         {"type": "text", "text": "What is this?"},
                                                         {"type": "image", "image": "file:///a.png"}]}])
    add("video_content", [{"role": "user", "content": [{"type": "video", "video": "file:///v.mp4"},
                                                       {"type": "text", "text": "Summarise"}]}])
    add("vision_ids", [{"role": "user", "content": [{"type": "image"}, {"type": "image"}, {"type": "text", "text": "A"}]},
                       {"role": "assistant", "content": "ok"},
                       {"role": "user", "content": [{"type": "video"}, {"type": "image"}, {"type": "text", "text": "B"}]}],
        add_vision_id=True)
    add("system_list_content", [{"role": "system", "content": [{"type": "text", "text": "Part one. "},
                                                              {"type": "text", "text": "Part two."}]},
                                {"role": "user", "content": "hi"}])
    add("unicode_and_whitespace", [{"role": "system", "content": "\n\tSystème ✓ \u3000"},
                                   {"role": "user", "content": "  ¿Qué tal? 🌍\n\n"},
                                   {"role": "assistant", "content": "\u00a0Bien.\u00a0"},
                                   {"role": "user", "content": "\"quotes\" and \\backslash\\"}])
    add("null_content_user", [{"role": "user", "content": None}])
    add("missing_content_user", [{"role": "user"}])
    # errors raised by the template
    add("error_no_messages", [])
    add("error_only_system", [sys_msg])
    add("error_system_not_first", [{"role": "user", "content": "a"}, sys_msg])
    add("error_unknown_role", [{"role": "developer", "content": "x"}, {"role": "user", "content": "a"}])
    add("error_system_image", [{"role": "system", "content": [{"type": "image"}]}, {"role": "user", "content": "a"}])
    add("error_system_video", [{"role": "system", "content": [{"type": "video"}]}, {"role": "user", "content": "a"}],
        tools=[WEATHER])
    add("error_bad_content_item", [{"role": "user", "content": [{"type": "audio", "audio": "x"}]}])
    add("error_bad_content_type", [{"role": "user", "content": 42}])
    add("error_only_tool_responses", [{"role": "user", "content": "<tool_response>\nx\n</tool_response>"}])
    add("error_user_role_missing_plus", [{"role": "user", "content": "a"}, {"content": "no role"}])
    add("preserve_thinking_history", [{"role": "user", "content": "Q1"},
                                      {"role": "assistant", "content": "A1", "reasoning_content": "R1"},
                                      {"role": "user", "content": "Q2"},
                                      {"role": "assistant", "content": "A2"},
                                      {"role": "user", "content": "Q3"}], preserve_thinking=True)
    add("preserve_thinking_false", [{"role": "user", "content": "Q1"},
                                    {"role": "assistant", "content": "A1", "reasoning_content": "R1"},
                                    {"role": "user", "content": "Q2"}], preserve_thinking=False)
    return C


# ---------------------------------------------------------------------------
# Snippets: (name, template, context)

def snippets():
    S = []

    def add(name, tpl, **ctx):
        S.append({"name": name, "template": tpl, "context": ctx})

    # whitespace control
    add("ws_trim_blocks", "{% if true %}\nA\n{% endif %}\nB")
    add("ws_lstrip_blocks", "  {% if true %}\n  x\n  {% endif %}\ny")
    add("ws_minus", "a  {%- if true -%}  b  {%- endif -%}  c")
    add("ws_var_minus", "a \n {{- 'x' -}} \n b")
    add("ws_plus_disables_lstrip", "  {%+ if true %}x{% endif %}")
    add("ws_plus_disables_trim", "{% if true +%}\nx{% endif %}")
    add("ws_comment", "a\n  {# comment #}\nb {#- c -#} d")
    add("ws_trailing_newline", "line\n")
    add("ws_two_trailing_newlines", "line\n\n")
    add("ws_crlf", "a\r\nb\rc")
    add("ws_var_no_lstrip", "  {{ 'x' }}\n  {% if true %}y{% endif %}")
    add("ws_raw", "{% raw %}{{ not evaluated }}{% endraw %}")
    add("ws_mid_line_tag", "ab {% if true %}c{% endif %} d\n  e")
    # expressions
    add("arith", "{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 4 / 2 }}")
    add("float_repr", "{{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e15 }} {{ 1.0 }} {{ 0.0001 }} {{ 0.00001 }} {{ 2.5e-7 }} {{ -0.0 }}")
    add("concat_tilde", "{{ 'a' ~ 1 ~ none ~ true ~ 2.5 ~ [1, 'b'] ~ {'k': 'v'} }}")
    add("string_ops", "{{ 'ab' * 3 }}{{ 'x' + 'y' }}{{ [1] + [2] }}")
    add("compare", "{{ 1 < 2 < 3 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1,2] < [1,3] }} {{ 2 >= 3 }} {{ none == none }}")
    add("in_ops", "{{ 'a' in 'cat' }} {{ 2 in [1,2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }} {{ 3 not in [3] }}")
    add("logic", "{{ 0 or 'x' }} {{ 1 and 'y' }} {{ none or [] }} {{ not 0 }} {{ not 'a' }}")
    add("ternary", "{{ 'y' if 1 else 'n' }} {{ 'y' if 0 else 'n' }} [{{ 'y' if 0 }}]")
    add("subscript_slice", "{{ 'hello'[1] }} {{ 'hello'[-1] }} {{ 'hello'[1:3] }} {{ 'hello'[::-1] }} {{ [1,2,3,4][::2] }} {{ [1,2,3][-2:] }} {{ 'héllo'[::-1] }} {{ [1,2,3][5] }}")
    add("attr_fallback", "{{ d.a }} {{ d['a'] }} {{ d.missing }} {{ d.items is callable }}", d={"a": 1})
    add("dict_key_named_items", "{{ d['items'] }}|{{ d.get('items') }}", d={"items": "X"})
    add("print_none_bool", "{{ none }} {{ true }} {{ false }} {{ [none, true] }}")
    add("list_dict_repr", "{{ [1, 'a', \"b'c\", none, 2.0] }} {{ {'x': [1, {'y': 'z'}]} }}")
    add("unary", "{{ -3 }} {{ +3 }} {{ -(2 + 1) }} {{ -1|abs }}")
    add("str_escape_literals", "{{ 'a\\nb\\t\\u00e9\\x41\\\\' }}|{{ \"q'q\" }}|{{ 'x' 'y' }}")
    # tests
    add("tests_types", "{{ x is string }} {{ x is mapping }} {{ l is sequence }} {{ l is iterable }} {{ n is number }} {{ n is integer }} {{ f is float }} {{ b is boolean }} {{ none is none }} {{ u is defined }} {{ u is undefined }}",
        x="s", l=[1], n=3, f=1.5, b=True)
    add("tests_undefined_iterable", "{{ u is iterable }} {{ u is sequence }} {{ u is mapping }} {{ u is string }} {{ none is iterable }}")
    add("tests_true_false", "{{ true is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }} {{ x is false }}", x=False)
    add("tests_misc", "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 'ab' is lower }} {{ 'AB' is upper }} {{ 2 is in [1,2] }} {{ 1 is eq 1 }} {{ 1 is lt 2 }} {{ 'trim' is filter }} {{ 'odd' is test }}")
    add("tests_not", "{{ x is not none }} {{ x is not defined }}", x=1)
    # filters
    add("f_tojson", "{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ d|tojson(sort_keys=true) }}|{{ 'é'|tojson }}|{{ 'é'|tojson(ensure_ascii=true) }}|{{ [1.0, 1e20, none, true]|tojson }}|{{ d|tojson(separators=[',', ':']) }}",
        d={"b": 1, "a": ["x", {"c": None}], "u": "ü\n\"\\/\u2028\x01"})
    add("f_tojson_empty", "{{ {}|tojson }} {{ []|tojson }} {{ {}|tojson(indent=2) }} {{ {'a': []}|tojson(indent=2) }}")
    add("f_trim", "[{{ '  a b \\n'|trim }}][{{ 'xxaxx'|trim('x') }}][{{ 5|trim }}][{{ u|trim }}]")
    add("f_length", "{{ 'héllo'|length }} {{ [1,2]|length }} {{ {'a':1}|length }} {{ u|length }} {{ 'ab'|count }}")
    add("f_case", "{{ 'hello world'|upper }} {{ 'HeLLo'|lower }} {{ 'hello wORLD-x(y'|title }} {{ 'hello World'|capitalize }} {{ 'straße'|upper }}")
    add("f_items", "{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}{% for k, v in u|items %}X{% endfor %}", d={"z": 1, "a": 2})
    add("f_first_last", "{{ [1,2,3]|first }} {{ [1,2,3]|last }} {{ 'abc'|first }} {{ []|first }}|")
    add("f_join", "{{ [1,'a',none]|join(', ') }} {{ ['x','y']|join }} {{ l|join('-', attribute='n') }}", l=[{"n": 1}, {"n": 2}])
    add("f_default", "{{ u|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} {{ none|default('d') }} {{ u|d('x') }}")
    add("f_replace", "{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'abc'|replace('', '-') }}")
    add("f_list_string", "{{ 'abc'|list }} {{ {'a':1,'b':2}|list }} {{ 12|string ~ 'x' }} {{ [1]|string }}")
    add("f_int_float", "{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ '0x1A'|int(0, 16) }} {{ '2.5'|float }} {{ 'y'|float }} {{ true|int }}")
    add("f_reverse", "{{ 'abc'|reverse }} {{ [1,2,3]|reverse|list }}")
    add("f_map_select", "{{ l|map(attribute='n')|list }} {{ l|selectattr('n', 'gt', 1)|map(attribute='n')|list }} {{ l|rejectattr('n', 'equalto', 1)|list }} {{ [1,2,3,4]|select('odd')|list }} {{ [1,0,2]|select|list }} {{ [1,2,3]|reject('even')|list }} {{ ['A','b']|map('lower')|list }} {{ l|map(attribute='m', default='-')|list }}",
        l=[{"n": 1}, {"n": 2}, {"n": 3}])
    add("f_selectattr_truthy", "{{ msgs|selectattr('tool_calls')|list|length }} {{ msgs|selectattr('role', 'equalto', 'user')|list|length }}",
        msgs=[{"role": "user"}, {"role": "assistant", "tool_calls": [1]}, {"role": "user", "tool_calls": []}])
    add("f_unique_sort", "{{ ['b','A','a','c']|unique|list }} {{ [3,1,2]|sort }} {{ ['b','A','c']|sort }} {{ ['b','A','c']|sort(case_sensitive=true) }} {{ l|sort(attribute='n', reverse=true)|map(attribute='n')|list }}",
        l=[{"n": 1}, {"n": 3}, {"n": 2}])
    add("f_misc", "{{ [1,2,3]|sum }} {{ [1,5,2]|max }} {{ [4,1]|min }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ 3|round }} {{ 2.1|round(0, 'ceil') }} {{ 'a b  c'|wordcount }} {{ '<a&b>'|e }} {% for k, v in d|dictsort %}{{ k }}{{ v }}{% endfor %} {{ [1,2,3,4,5]|batch(2)|list }}",
        d={"b": 1, "a": 2})
    add("f_indent", "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(1, blank=true) }}")
    add("f_safe_string", "{{ (3|safe) is string }} {{ 3|safe }} {{ none|string }}")
    add("f_format", "{{ '%s-%d'|format('a', 3) }} {{ '%5.2f'|format(3.14159) }} {{ 'x%%'|format() }}")
    # str / dict methods
    add("m_str", "{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a,b,c'.rsplit(',', 1) }} {{ 'a b c'.split(none, 1) }} {{ 'xxhixx'.strip('x') }} {{ '  hi '.lstrip() }}|{{ ' hi  '.rstrip() }}| {{ 'hello'.startswith('he') }} {{ 'hello'.endswith(('x', 'lo')) }} {{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ 'hello'.count('l') }} {{ 'a-b'.replace('-', '+') }} {{ 'hello world'.title() }} {{ 'Hi'.upper() }}{{ 'Hi'.lower() }}")
    add("m_str_unicode", "{{ 'héllo wörld'.find('w') }} {{ 'ÀÉ'.lower() }} {{ 'ß'.upper() }} {{ '\u3000x\u00a0'.strip() }}|{{ 'a\u2003b'.split() }}")
    add("m_dict", "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 5) }} {{ d.keys()|list }} {{ d.values()|list }} {% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}", d={"a": 1, "b": 2})
    add("m_join_format", "{{ '-'.join(['a', 'b']) }} {{ '{} is {}'.format('x', 1) }} {{ '{0}{0}'.format('y') }} {{ 'a\\nb\\r\\nc'.splitlines() }}")
    # statements
    add("for_loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}|{% endfor %}")
    add("for_prev_next", "{% for x in [1,2,3] %}{{ loop.previtem|default('-') }}{{ x }}{{ loop.nextitem|default('-') }} {% endfor %}")
    add("for_else", "{% for x in [] %}x{% else %}empty{% endfor %}{% for x in [1] if x > 5 %}y{% else %}filtered{% endfor %}")
    add("for_filter_length", "{% for x in range(10) if x is odd %}{{ x }}/{{ loop.length }} {% endfor %}")
    add("for_unpack_dict", "{% for k in {'b': 1, 'a': 2} %}{{ k }}{% endfor %}")
    add("for_break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}")
    add("for_scope", "{% set x = 1 %}{% for i in [1,2] %}{% set x = x + 10 %}{{ x }} {% endfor %}{{ x }}")
    add("for_nested_loop", "{% for a in [1,2] %}{% for b in [3,4] %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %}")
    add("for_cycle", "{% for x in range(5) %}{{ loop.cycle('a', 'b') }}{% endfor %}")
    add("if_elif_else", "{% for v in [1, 2, 3] %}{% if v == 1 %}one{% elif v == 2 %}two{% else %}many{% endif %} {% endfor %}")
    add("if_scope_leaks", "{% if true %}{% set y = 5 %}{% endif %}{{ y }}")
    add("set_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = (1, 2) %}{{ t|list }}{{ t|length }}")
    add("set_block", "{% set x %}  inner {{ 1 + 1 }}  {% endset %}[{{ x }}]{% set y | upper %}abc{% endset %}{{ y }}")
    add("namespace", "{% set ns = namespace(count=0, items=[]) %}{% for x in [1,2,3] %}{% set ns.count = ns.count + x %}{% endfor %}{{ ns.count }} {{ ns.missing is defined }}")
    add("namespace_from_dict", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}")
    add("macro_basic", "{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('A') }} {{ greet('B', 'Hi') }} {{ greet(name='C', greeting='Yo') }} [{{ greet() }}]")
    add("macro_varargs_kwargs", "{% macro m(a) %}{{ a }}{{ varargs|list }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k='v') }}")
    add("macro_outer_vars", "{% set g = 'G' %}{% macro m() %}{{ g }}{{ later }}{% endmacro %}{% set later = 'L' %}{{ m() }}")
    add("macro_returns_string", "{% macro m() %}  x  {% endmacro %}[{{ m()|trim }}]{{ m() is string }}")
    add("call_block", "{% macro wrap(t) %}<{{ t }}>{{ caller() }}</{{ t }}>{% endmacro %}{% call wrap('b') %}inside{% endcall %}")
    add("call_block_args", "{% macro each(l) %}{% for x in l %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(v) each([1,2]) %}[{{ v }}]{% endcall %}")
    add("filter_block", "{% filter upper %}hello {{ 'x' }}{% endfilter %}")
    add("with_block", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a is defined }}")
    add("generation_block", "{% generation %}gen {{ 1 }}{% endgeneration %}")
    add("print_tag", "{% print 'a', 1 %}")
    add("range_dict", "{{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} {{ dict(a=1, b='x') }}")
    add("undefined_printing", "[{{ nope }}][{{ nope ~ 'x' }}][{{ nope|string }}][{{ d.nope }}]", d={})
    add("undefined_compare", "{{ nope == 'x' }} {{ nope != 'x' }} {{ nope is none }} {{ not nope }}")
    add("context_none", "{{ n is none }}{{ n }}{{ n.attr is defined }}", n=None)
    add("generator_truthiness", "{{ 'yes' if [1]|select('even') else 'no' }} {{ 'yes' if [1]|select('even')|list else 'no' }}")
    add("comments_multiline", "a{#\nmulti\nline\n#}b\n{# x #}\nc")
    add("loop_over_messages_reverse", "{% for m in messages[::-1] %}{{ (messages|length - 1) - loop.index0 }}{{ m.role }} {% endfor %}",
        messages=[{"role": "a"}, {"role": "b"}, {"role": "c"}])
    add("nested_data_access", "{{ m[0].content[1].text }} {{ m[0]['content'][0]['type'] }} {{ m.0.role }}",
        m=[{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "T"}]}])
    add("strftime_constant", "{{ strftime_now('%%') }}")
    add("bos_eos_tokens", "{{ bos_token }}x{{ eos_token }}", bos_token="<s>", eos_token="</s>")
    # runtime errors
    add("err_raise_exception", "line1\n{% if true %}\n{{ raise_exception('Boom: ' ~ 42) }}\n{% endif %}")
    add("err_raise_in_macro", "{% macro m() %}\n{{ raise_exception('from macro') }}\n{% endmacro %}\n\n{{ m() }}")
    add("err_add_str_int", "{{ 'a' + 1 }}")
    add("err_undefined_attr", "{{ x.y.z }}")
    add("err_undefined_add", "{{ nope + 1 }}")
    add("err_items_non_mapping", "{% for k, v in 'abc'|items %}{% endfor %}")
    add("err_tojson_undefined", "{{ nope|tojson }}")
    add("err_iterate_none", "{% for x in none %}{% endfor %}")
    add("err_unpack", "{% for a, b in [[1, 2, 3]] %}{% endfor %}")
    add("err_div_zero", "{{ 1 // 0 }}")
    add("err_set_non_namespace", "{% set d = {} %}{% set d.x = 1 %}")
    add("err_unsafe_method", "{% set l = [] %}{{ l.append(1) }}")
    add("err_call_non_callable", "{{ 'a'() }}")
    add("err_in_none", "{{ 'a' in none }}")
    add("err_macro_too_many_args", "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}")
    # syntax errors
    add("syn_unclosed_for", "a\n{% for x in y %}\nbody")
    add("syn_unknown_tag", "x\n\n{% frobnicate %}")
    add("syn_bad_endtag", "{% if x %}\n{% endfor %}")
    add("syn_unknown_filter", "\n{{ x|nonexistent_filter }}")
    add("syn_unknown_test", "{{ x is frobbed }}")
    add("syn_bad_expression", "{{ 1 + }}")
    add("syn_unclosed_var", "{{ x ")
    add("syn_unclosed_comment", "{# x ")
    add("syn_unbalanced", "{{ (1 + 2 }}")
    add("syn_break_outside_loop", "{% break %}")
    return S


def main():
    env = make_env()
    os.makedirs(OUT, exist_ok=True)
    sources = {}
    for key, rel in TEMPLATES.items():
        with open(os.path.join(ROOT, rel), encoding="utf-8", newline="") as f:
            sources[key] = f.read()
    cases = []
    for conv in conversations():
        results = {}
        for key, src in sources.items():
            ctx = {"messages": conv["messages"], "tools": conv["tools"], "documents": None,
                   "add_generation_prompt": conv["add_generation_prompt"], **conv["kwargs"]}
            results[key] = render(env, src, ctx)
        cases.append({**conv, "results": results})
    with open(os.path.join(OUT, "qwen_chat_goldens.json"), "w", encoding="utf-8") as f:
        json.dump({"generator": "tools/jinja_golden/make_golden.py", "jinja2": jinja2.__version__,
                   "templates": TEMPLATES, "cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    snips = []
    for s in snippets():
        snips.append({**s, "result": render(env, s["template"], s["context"])})
    with open(os.path.join(OUT, "snippet_goldens.json"), "w", encoding="utf-8") as f:
        json.dump({"generator": "tools/jinja_golden/make_golden.py", "jinja2": jinja2.__version__,
                   "snippets": snips}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    n_err = sum(1 for c in cases for r in c["results"].values() if "error" in r)
    print(f"{len(cases)} conversations x {len(sources)} templates ({n_err} error results), {len(snips)} snippets",
          file=sys.stderr)


if __name__ == "__main__":
    main()
