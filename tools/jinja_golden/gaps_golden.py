#!/usr/bin/python3
"""Expected outputs for tests/jinja/jinja_gaps_test.cc, rendered with the real Jinja2
(Debian python3-jinja2) in the sandboxed environment transformers uses, with its tojson. Prints C++
initialiser rows {template, context JSON, expected} to paste into the test.

Run:  /usr/bin/python3 tools/jinja_golden/gaps_golden.py
"""
import json

import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

CASES = [
    # loop.changed
    ("{% for x in xs %}{% if loop.changed(x.g) %}[{{ x.g }}]{% endif %}{{ x.v }}{% endfor %}",
     {"xs": [{"g": "a", "v": 1}, {"g": "a", "v": 2}, {"g": "b", "v": 3}, {"g": "a", "v": 4}]}),
    ("{% for x in [1,1,2,2,1] %}{{ loop.changed(x, 0) }},{% endfor %}", {}),
    # recursive loops
    ("{% for n in tree recursive %}<{{ n.name }}@{{ loop.depth }}/{{ loop.depth0 }}"
     "{% if n.children %}{{ loop(n.children) }}{% endif %}>{% endfor %}",
     {"tree": [{"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}, {"name": "d"}]},
               {"name": "e"}]}),
    ("{% for n in tree if n.keep recursive %}{{ n.name }}{% if n.c %}({{ loop(n.c) }}){% endif %}{% endfor %}",
     {"tree": [{"name": "a", "keep": 1, "c": [{"name": "x", "keep": 0}, {"name": "y", "keep": 1}]},
               {"name": "b", "keep": 0}]}),
    # truncate
    ("{{ 'foo bar baz qux quux' | truncate(9) }}", {}),
    ("{{ 'foo bar baz qux quux' | truncate(9, true) }}", {}),
    ("{{ 'foo bar baz qux quux' | truncate(11, false, '!', 0) }}", {}),
    ("{{ 'short' | truncate(3, leeway=2) }}", {}),
    ("{{ 'abcdefgh' | truncate(5, leeway=0) }}", {}),
    ("{{ 'ééé ééé ééé' | truncate(6, leeway=0) }}", {}),
    ("{{ s | truncate }}", {"s": "word " * 60}),
    # striptags
    ("{{ '<p>Hello <b>world</b></p>  <!-- c <x> -->\n\tbye &amp; &lt;ok&gt; &#65;&#x42; &raquo;' | striptags }}", {}),
    ("{{ 'a <b\nc> d' | striptags }}", {}),
    ("{{ 5 | striptags }}", {}),
    # slice
    ("{% for col in [1,2,3,4,5,6,7] | slice(3) %}{{ col | join(',') }};{% endfor %}", {}),
    ("{% for col in [1,2,3,4,5] | slice(3, 0) %}{{ col | join(',') }};{% endfor %}", {}),
    ("{{ [1,2] | slice(4) | list | length }}", {}),
    ("{% for col in 'abcde' | slice(2) %}{{ col | join }}|{% endfor %}", {}),
    # cycler
    ("{% set c = cycler('odd', 'even') %}{% for i in range(5) %}{{ c.next() }} {% endfor %}"
     "{{ c.current }}", {}),
    ("{% set c = cycler(1, 2, 3) %}{{ c.next() }}{{ c.next() }}{{ c.reset() }}{{ c.current }}{{ c.next() }}", {}),
    # joiner
    ("{% set pipe = joiner('|') %}{% for x in 'abc' %}{{ pipe() }}{{ x }}{% endfor %}", {}),
    ("{% set j = joiner() %}{{ j() }}a{{ j() }}b{{ j() }}c", {}),
    # casefold
    ("{{ 'Straße'.casefold() }} {{ 'ΣΑΣ'.casefold() }} {{ 'ǅ'.casefold() }} {{ 'ABC'.casefold() }}", {}),
    ("{{ 'Straße'.casefold() == 'STRASSE'.casefold() }} {{ 'Straße'.lower() }}", {}),
    # integers near and past 64 bits that print and compare exactly
    ("{{ n }} {{ n == 18446744073709551615 }} {{ n > 9223372036854775807 }}",
     {"n": 18446744073709551615}),
    ("{{ 9223372036854775806 + 1 }}", {}),
    # tuples print, compare and combine as Python tuples
    ("{{ (1,) }} {{ (1, 2) }} {{ () }} {{ 1, 2 }} {{ ('a', (1, [2, (3,)]), {'k': ()}) }} {{ (\"it's\", none, true, 1.5) }}", {}),
    ("{{ d.items() | list }} {{ d | items | list }} {{ d | dictsort }} {{ d | dictsort(by='value', reverse=true) }}",
     {"d": {"b": 2, "a": 1}}),
    ("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k, v in d | dictsort %}{{ k }}={{ v }};{% endfor %}"
     "{{ (d | dictsort)[0] }} {{ (d | dictsort)[0][1] }} {{ d.items() | list | first }}",
     {"d": {"b": 2, "a": 1}}),
    ("{{ 'a=b=c'.partition('=') }} {{ 'a=b=c'.rpartition('=') }} {{ 'abc'.partition('x') }} {{ 'abc'.rpartition('x') }}"
     " {{ 'k: v'.partition(': ')[2] }} {{ 'a,b'.partition(',') | list }} {{ 'a,b'.partition(',') | join('|') }}", {}),
    ("{% macro m() %}{{ varargs }}|{{ varargs | length }}|{{ varargs is sequence }}|{% endmacro %}"
     "{{ m() }}{{ m(1) }}{{ m(1, 'x', (2,)) }}", {}),
    ("{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, (2,), y=(3,)) }}", {}),
    ("{% set x = 1, 2 %}{{ x }}{% set a, b = x %}{{ a }}{{ b }}{% for p, q in [(1, 2), (3, 4)] %}{{ p }}{{ q }}"
     "{% endfor %}{% for t in (1, 2), (3, 4) %}{{ t }}{% endfor %}{% with a, b = (5, 6) %}{{ a }}{{ b }}{% endwith %}", {}),
    ("{% for x in (1, 2, 3) %}{{ loop.cycle('a', 'b') }}{{ loop.previtem }}{{ loop.length }}{% endfor %}", {}),
    ("{{ (1, 2) == [1, 2] }} {{ (1, 2) != [1, 2] }} {{ (1, 2) == (1, 2) }} {{ [(1, 2)] == [[1, 2]] }}"
     " {{ {'a': (1,)} == {'a': [1]} }} {{ 1 in (1, 2) }} {{ (1, 2) in [(1, 2)] }} {{ [1, 2] in [(1, 2)] }}"
     " {{ (1, 2) in [[1, 2]] }} {{ (1,) in {'a': 1} }} {{ ('a', 1) in d | dictsort }}", {"d": {"a": 1}}),
    ("{{ (1, 2) < (1, 3) }} {{ (1, 2) < (1, 2, 0) }} {{ [(1, 2)] < [(1, 3)] }} {{ ((2, 'b'), (1, 'a')) | sort }}"
     " {{ ((2, 'b'), (1, 'a')) | max }}", {}),
    ("{{ (1, 2, 3)[1] }} {{ (1, 2, 3)[-1] }} {{ (1, 2, 3)[1:] }} {{ (1, 2, 3)[::-1] }} {{ (1, 2, 3)[5:] }}"
     " {{ (1, 2)[0:1] }} {{ [1, 2, 3][1:] }} {{ (1, 2)[5] is defined }}", {}),
    ("{{ (1, 2) + (3,) }} {{ (1, 2) * 2 }} {{ 2 * (1,) }} {{ () + () }} {{ [1] + [(2, 3)] }} {{ (1, 2) | list + [3] }}", {}),
    ("{{ (1, 2) | list }} {{ (1, 2) | length }} {{ () | length }} {{ (1, 2) | first }} {{ (3, 1, 2) | sort }}"
     " {{ (1, 2) | reverse | list }} {{ (1, 2) | join(',') }} {{ (1, 2) | sum }} {{ [(1, 2), (1, 2)] | unique | list }}"
     " {{ ((1, 2), (3, 4)) | map('last') | list }} {{ [(1, 2)] | map('list') | list }} {{ (1, 2) | batch(1) | list }}", {}),
    ("{{ (1, 2) | tojson }} {{ [(1, 'a')] | tojson }} {{ {'a': (1, 2)} | tojson }} {{ d | dictsort | tojson }}"
     " {{ {'a': 1} | tojson(separators=(',', ':')) }}", {"d": {"b": 2, "a": 1}}),
    ("{{ (1, 2) is sequence }} {{ (1, 2) is mapping }} {{ (1, 2) is iterable }} {{ (1, 2) is string }}"
     " {{ () is sequence }} {{ (1, 2) is eq((1, 2)) }} {{ (1, 2) is eq([1, 2]) }} {{ (1, 2) is in([(1, 2)]) }}", {}),
    ("{{ (1, 2) | string }} {{ (1, 2) ~ '' }} {{ ('a', 1) | pprint }} {{ not () }} {{ (0,) | default('x') }}"
     " {{ () | default('x', true) }} {{ (1, 2, 2).count(2) }} {{ (1, 2).index(2) }} {{ (1, 2).append is defined }}", {}),
    ("{% set ns = namespace(x=(1, 2)) %}{{ ns.x }} {{ ns }} {{ dict(a=(1, 2)) }} {{ {'k': (1, 2)} }}"
     " {{ {'k': (1,), 'k': (2,)} }} {{ dict(d) }} {{ dict([('x', (1,))]) }}", {"d": {"a": 1}}),
    ("{{ '%s-%s' % (1, 2) }} {{ '%s' % ((1, 2),) }} {{ '%s' % [1, 2] }} {{ 'x' % [1] }} {{ '%s' | format((1, 2)) }}"
     " {{ '%s' | format([1, 2]) }} {{ '%s and %s' | format('a', 'b') }} {{ 'abc'.startswith(('x', 'a')) }}", {}),
]


def make_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols, jinja2.ext.do])
    # Hugging Face's tojson (json.dumps), as in make_golden.py: a tuple is written as an array.
    env.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, separators=None, sort_keys=False: json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
    return env


def cxx(s):
    return json.dumps(s, ensure_ascii=False)


def main():
    env = make_env()
    for src, ctx in CASES:
        try:
            out = env.from_string(src).render(**ctx)
        except Exception as e:  # noqa: BLE001  (shown, so a case that errors is noticed)
            out = "!" + type(e).__name__ + ": " + str(e)
        print("    {%s,\n     %s,\n     %s}," % (cxx(src), cxx(json.dumps(ctx)), cxx(out)))


if __name__ == "__main__":
    main()
