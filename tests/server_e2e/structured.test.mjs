// Structured outputs end to end (started by run.sh next to e2e.test.mjs): on the demo model,
// whose random weights make the grammar do all the work, every constrained output must parse
// and validate against its JSON Schema (ajv), choice and regex outputs must match, forced tool
// calls must carry schema-valid arguments. Schemas bound their strings and arrays so outputs
// finish within max_tokens; an output is only checked when it finished with "stop", and most
// of them must.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const base = process.env.QINFER_BASE_URL;
const mode = process.env.QINFER_MODE;
const model = process.env.QINFER_MODEL_NAME;
const apiKey = process.env.QINFER_API_KEY;
if (!base || !/^http:\/\/127\.0\.0\.1:\d+\/v1$/.test(base)) throw new Error('QINFER_BASE_URL must be a loopback URL');
const client = new OpenAI({ baseURL: base, apiKey, maxRetries: 0, timeout: 300_000 });
const chatOnly = { skip: mode !== 'chat' };
const idsOnly = { skip: mode !== 'ids' };
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);

const S = (n) => ({ type: 'string', maxLength: n });
const I = (lo, hi) => ({ type: 'integer', minimum: lo, maximum: hi });
const obj = (properties, required = Object.keys(properties), extra = {}) =>
  ({ type: 'object', properties, required, additionalProperties: false, ...extra });

// 56 schemas of varied features.
const schemas = [
  obj({ name: S(8) }),
  obj({ name: S(8), age: I(0, 120) }),
  obj({ a: { type: 'boolean' }, b: { type: 'null' } }),
  obj({ n: { type: 'integer', minimum: -50, maximum: -3 } }),
  obj({ n: { type: 'integer', exclusiveMinimum: 0, exclusiveMaximum: 10 } }),
  obj({ x: { type: 'number', minimum: 0, maximum: 1 } }),
  obj({ x: { type: 'number', minimum: -5, exclusiveMaximum: 5 } }),
  obj({ x: { type: 'number' } }),
  obj({ c: { enum: ['red', 'green', 'blue'] } }),
  obj({ c: { enum: [1, 'two', null, true, 3.5] } }),
  obj({ k: { const: 'fixed' }, v: I(1, 3) }),
  obj({ id: { type: 'string', format: 'uuid' } }),
  obj({ d: { type: 'string', format: 'date' } }),
  obj({ t: { type: 'string', format: 'time' } }),
  obj({ dt: { type: 'string', format: 'date-time' } }),
  obj({ e: { type: 'string', format: 'email' } }),
  obj({ ip: { type: 'string', format: 'ipv4' } }),
  obj({ h: { type: 'string', format: 'hostname' } }),
  obj({ u: { type: 'string', format: 'uri' } }),
  obj({ code: { type: 'string', pattern: '^[A-Z]{3}-[0-9]{3}$' } }),
  obj({ p: { type: 'string', pattern: '^(yes|no)_[a-z]{1,4}$' } }),
  obj({ s: { type: 'string', minLength: 2, maxLength: 4 } }),
  obj({ tags: { type: 'array', items: S(5), maxItems: 3 } }),
  obj({ tags: { type: 'array', items: I(0, 9), minItems: 2, maxItems: 4 } }),
  obj({ pair: { type: 'array', prefixItems: [S(4), I(0, 99)], items: false, minItems: 2 } }),
  obj({ m: { type: 'array', items: { enum: ['a', 'b'] }, minItems: 1, maxItems: 2 } }),
  obj({ inner: obj({ z: I(0, 5) }) }),
  obj({ inner: obj({ deeper: obj({ leaf: { type: 'boolean' } }) }) }),
  obj({ list: { type: 'array', maxItems: 2, items: obj({ k: S(3), v: I(0, 9) }) } }),
  obj({ opt: S(4), req: I(0, 9) }, ['req']),
  obj({ a: S(3), b: S(3), c: S(3) }, []),
  obj({ a: I(0, 9), b: { type: 'boolean' }, c: S(2), d: { type: 'null' } }, ['b', 'd']),
  obj({ v: { anyOf: [I(0, 9), S(3)] } }),
  obj({ v: { oneOf: [{ type: 'null' }, obj({ q: I(1, 2) })] } }),
  obj({ v: { type: ['integer', 'null'], minimum: 0, maximum: 5 } }),
  obj({ v: { type: ['string', 'boolean'], maxLength: 3 } }),
  { $defs: { pt: obj({ x: I(-9, 9), y: I(-9, 9) }) }, ...obj({ from: { $ref: '#/$defs/pt' }, to: { $ref: '#/$defs/pt' } }) },
  { definitions: { c: { enum: ['x', 'y'] } }, ...obj({ c: { $ref: '#/definitions/c' } }) },
  { $defs: { node: obj({ v: I(0, 9), next: { anyOf: [{ type: 'null' }, { $ref: '#/$defs/node' }] } }) }, $ref: '#/$defs/node' },
  obj({ extra: { type: 'object', properties: { k: I(0, 3) }, required: ['k'], additionalProperties: false } }),
  { type: 'object', properties: { a: I(0, 3) }, required: ['a'], additionalProperties: I(0, 1), maxProperties: undefined },
  { type: 'array', items: I(0, 100), minItems: 1, maxItems: 3 },
  { type: 'array', prefixItems: [{ type: 'boolean' }, { type: 'null' }, S(2)], items: false },
  { type: 'string', maxLength: 6 },
  { type: 'string', enum: ['alpha', 'beta'] },
  { type: 'integer', minimum: 1000, maximum: 100000 },
  { type: 'number', minimum: -1, maximum: 1 },
  { type: 'boolean' },
  { type: 'null' },
  { anyOf: [{ type: 'boolean' }, obj({ n: I(0, 1) })] },
  { allOf: [obj({ only: S(2) })] },
  obj({ title: S(10), body: S(20), score: { type: 'number', minimum: 0, maximum: 10 }, tags: { type: 'array', items: S(4), maxItems: 2 } }),
  obj({ user: obj({ id: I(1, 999), email: { type: 'string', format: 'email' } }), roles: { type: 'array', items: { enum: ['admin', 'dev'] }, maxItems: 2 } }),
  obj({ grid: { type: 'array', maxItems: 2, items: { type: 'array', items: I(0, 1), maxItems: 2 } } }),
  obj({ 'key with space': S(2), 'quote"key': I(0, 1) }),
  obj({ unicode: { type: 'string', pattern: '^[äöü€中]{1,3}$' } }),
];
for (const s of schemas) delete s.maxProperties;

function messages(i) {
  return [{ role: 'user', content: `Give me JSON number ${i}.` }];
}

function checkSchema(schema, r, label) {
  const ch = r.choices ?? [r];
  let stops = 0;
  const validate = ajv.compile(schema);
  for (const c of ch) {
    const text = c.message?.content ?? c.text;
    if (c.finish_reason !== 'stop') continue;
    stops++;
    let v;
    try { v = JSON.parse(text); } catch (e) { assert.fail(`${label}: not JSON: ${JSON.stringify(text)}`); }
    assert.ok(validate(v), `${label}: ${JSON.stringify(text)} fails ${JSON.stringify(schema)}: ${ajv.errorsText(validate.errors)}`);
  }
  return [stops, ch.length];
}

test('56 JSON schemas, batched together with unconstrained requests, all valid', chatOnly, async () => {
  assert.ok(schemas.length >= 50);
  const free = Array.from({ length: 4 }, (_, i) => client.chat.completions.create({
    model, messages: messages(100 + i), max_tokens: 24, chat_template_kwargs: { enable_thinking: false } }));
  const runs = schemas.map((schema, i) => client.chat.completions.create({
    model, messages: messages(i), max_tokens: 160, seed: i, chat_template_kwargs: { enable_thinking: false },
    response_format: { type: 'json_schema', json_schema: { name: `s${i}`, schema, strict: true } },
  }));
  const results = await Promise.all(runs);
  let stops = 0;
  results.forEach((r, i) => { stops += checkSchema(schemas[i], r, `schema ${i}`)[0]; });
  assert.ok(stops >= schemas.length * 0.9, `only ${stops} of ${schemas.length} finished with stop`);
  for (const f of await Promise.all(free)) {
    assert.ok(['stop', 'length'].includes(f.choices[0].finish_reason));
    assert.equal(f.choices[0].message.role, 'assistant');
  }
});

test('streaming structured output, n = 3 (guided_json and structured_outputs.json)', chatOnly, async () => {
  for (const [i, extra] of [[22, (s) => ({ guided_json: s })], [37, (s) => ({ structured_outputs: { json: s } })]]) {
    const stream = await client.chat.completions.create({
      model, messages: messages(i), max_tokens: 160, n: 3, stream: true, chat_template_kwargs: { enable_thinking: false },
      ...extra(schemas[i]),
    });
    const text = ['', '', ''], finish = [null, null, null];
    for await (const c of stream) {
      for (const ch of c.choices) {
        text[ch.index] += ch.delta?.content ?? '';
        if (ch.finish_reason) finish[ch.index] = ch.finish_reason;
      }
    }
    const [stops] = checkSchema(schemas[i], { choices: text.map((t, k) => ({ message: { content: t }, finish_reason: finish[k] })) }, `stream ${i}`);
    assert.ok(stops >= 2, `streamed: ${stops} of 3 stopped`);
  }
});

test('non-streaming n = 4 with a nested schema', chatOnly, async () => {
  const i = 52;
  const r = await client.chat.completions.create({
    model, messages: messages(i), max_tokens: 200, n: 4, chat_template_kwargs: { enable_thinking: false },
    response_format: { type: 'json_schema', json_schema: { name: 'n4', schema: schemas[i] } },
  });
  assert.equal(r.choices.length, 4);
  const [stops] = checkSchema(schemas[i], r, 'n4');
  assert.ok(stops >= 3);
});

test('guided_choice and structured_outputs.choice pick one of the choices', chatOnly, async () => {
  const choices = ['positive', 'negative', 'neutral'];
  for (const body of [{ guided_choice: choices }, { structured_outputs: { choice: choices } }]) {
    const r = await client.chat.completions.create({
      model, messages: messages(1), max_tokens: 10, n: 3, chat_template_kwargs: { enable_thinking: false }, ...body });
    for (const c of r.choices) {
      assert.equal(c.finish_reason, 'stop');
      assert.ok(choices.includes(c.message.content), c.message.content);
    }
  }
});

test('regex (guided_regex, structured_outputs.regex) on chat and completions', chatOnly, async () => {
  const re = '[a-z]{2,5}-[0-9]{2}(\\.[A-Z])?';
  const full = new RegExp(`^(?:${re})$`);
  const chat = await client.chat.completions.create({
    model, messages: messages(2), max_tokens: 20, n: 2, chat_template_kwargs: { enable_thinking: false }, guided_regex: re });
  for (const c of chat.choices) {
    assert.equal(c.finish_reason, 'stop');
    assert.match(c.message.content, full);
  }
  const comp = await client.completions.create({ model, prompt: 'The code is', max_tokens: 20, structured_outputs: { regex: re } });
  assert.equal(comp.choices[0].finish_reason, 'stop');
  assert.match(comp.choices[0].text, full);
  const stream = await client.completions.create({ model, prompt: 'Code:', max_tokens: 20, guided_regex: re, stream: true });
  let text = '', finish = null;
  for await (const c of stream) { text += c.choices[0]?.text ?? ''; finish = c.choices[0]?.finish_reason ?? finish; }
  assert.equal(finish, 'stop');
  assert.match(text, full);
});

test('completions with guided_json and response_format', chatOnly, async () => {
  const schema = schemas[1];
  for (const body of [{ guided_json: JSON.stringify(schema) }, { response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } }]) {
    const r = await client.completions.create({ model, prompt: 'JSON:', max_tokens: 60, n: 2, ...body });
    const [stops] = checkSchema(schema, r, 'completions');
    assert.ok(stops >= 1);
  }
});

test('GBNF grammar (structured_outputs.grammar, guided_grammar)', chatOnly, async () => {
  const grammar = 'root ::= greeting " " name "!"\ngreeting ::= "hello" | "hi"\nname ::= [a-z]{1,6}';
  for (const body of [{ structured_outputs: { grammar } }, { guided_grammar: grammar }]) {
    const r = await client.chat.completions.create({
      model, messages: messages(3), max_tokens: 20, chat_template_kwargs: { enable_thinking: false }, ...body });
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.match(r.choices[0].message.content, /^(hello|hi) [a-z]{1,6}!$/);
  }
});

test('json_object: outputs that stop are JSON objects', chatOnly, async () => {
  const r = await client.chat.completions.create({
    model, messages: messages(4), max_tokens: 40, n: 4, chat_template_kwargs: { enable_thinking: false },
    response_format: { type: 'json_object' } });
  for (const c of r.choices) {
    assert.ok(c.message.content.startsWith('{'), c.message.content);
    if (c.finish_reason === 'stop') assert.equal(typeof JSON.parse(c.message.content), 'object');
  }
});

test('thinking on: the constraint starts after </think>', chatOnly, async () => {
  const tok = 248069;  // </think> in the Qwen3.5 vocabulary: forced first by logit_bias
  const r = await client.chat.completions.create({
    model, messages: messages(5), max_tokens: 60, logit_bias: { [tok]: 100 },
    response_format: { type: 'json_schema', json_schema: { name: 't', schema: schemas[1] } } });
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'stop');
  assert.ok(ajv.validate(schemas[1], JSON.parse(c.message.content.trim())), c.message.content);
});

test('tool_choice required / named: arguments fit the function schema', chatOnly, async () => {
  const tools = [
    { type: 'function', function: { name: 'get_weather', parameters: obj({ city: S(12), days: I(1, 7) }, ['city']) } },
    { type: 'function', function: { name: 'set_mode', parameters: obj({ mode: { type: 'string', enum: ['eco', 'turbo'] }, level: { type: 'number', minimum: 0, maximum: 3 }, flags: { type: 'array', items: { type: 'boolean' }, maxItems: 3 } }) } },
  ];
  const byName = Object.fromEntries(tools.map((t) => [t.function.name, t.function.parameters]));
  for (const [tool_choice, stream] of [['required', false], [{ type: 'function', function: { name: 'set_mode' } }, false], ['required', true]]) {
    const req = { model, messages: [{ role: 'user', content: 'Do it.' }], tools, tool_choice, max_tokens: 120, n: 2,
      chat_template_kwargs: { enable_thinking: false } };
    const calls = [];
    if (stream) {
      const s = await client.chat.completions.create({ ...req, stream: true });
      const acc = {};
      for await (const c of s) {
        for (const ch of c.choices) {
          for (const t of ch.delta?.tool_calls ?? []) {
            const k = `${ch.index}/${t.index}`;
            acc[k] ??= { name: '', arguments: '' };
            acc[k].name += t.function?.name ?? '';
            acc[k].arguments += t.function?.arguments ?? '';
          }
        }
      }
      calls.push(...Object.values(acc));
    } else {
      const r = await client.chat.completions.create(req);
      for (const c of r.choices) {
        assert.equal(c.finish_reason, typeof tool_choice === 'string' ? 'tool_calls' : 'stop');
        assert.equal(c.message.tool_calls.length, 1);
        calls.push(c.message.tool_calls[0].function);
      }
    }
    assert.equal(calls.length, 2);
    for (const f of calls) {
      assert.ok(byName[f.name], f.name);
      if (typeof tool_choice === 'object') assert.equal(f.name, 'set_mode');
      const args = JSON.parse(f.arguments);
      assert.ok(ajv.validate(byName[f.name], args), `${f.name}(${f.arguments}): ${ajv.errorsText()}`);
    }
  }
});

test('unsupported or bad structured output requests are 400s naming the field', chatOnly, async () => {
  const bad = async (extra, field, re) => {
    await assert.rejects(client.chat.completions.create({ model, messages: messages(0), max_tokens: 4, ...extra }),
      (e) => e.status === 400 && re.test(e.message) && (field === null || e.error?.param === field), JSON.stringify(extra));
  };
  await bad({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'integer', multipleOf: 3 } } } }, 'response_format', /multipleOf/);
  await bad({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: [1] } } }, 'response_format.json_schema.schema', /must be a JSON object/);
  await bad({ guided_regex: '(a)\\1' }, 'guided_regex', /backreference/);
  await bad({ structured_outputs: { regex: 'a(?=b)' } }, 'structured_outputs', /lookaround/);
  await bad({ guided_json: { type: 'array', uniqueItems: true } }, 'guided_json', /uniqueItems/);
  await bad({ guided_choice: [] }, 'guided_choice', /non-empty/);
  await bad({ guided_regex: 'a', guided_choice: ['b'] }, null, /only one structured output/);
  await bad({ structured_outputs: { structural_tag: '{}' } }, 'structured_outputs.structural_tag', /not supported/);
  await bad({ response_format: { type: 'yaml' } }, 'response_format.type', /yaml/);
  await bad({ guided_grammar: 'root ::= missing' }, 'guided_grammar', /undefined rule/);
  const odd = [{ type: 'function', function: { name: 'f', parameters: obj({ n: { type: 'integer', multipleOf: 2 } }) } }];
  await bad({ tools: odd, tool_choice: 'required' }, 'tools', /multipleOf/);
  await bad({ tools: odd, tool_choice: { type: 'function', function: { name: 'f' } }, guided_regex: 'a' }, 'guided_regex', /cannot be combined/);
});

test('structured outputs need a tokenizer', idsOnly, async () => {
  await assert.rejects(client.completions.create({ model, prompt: [1, 2], max_tokens: 2, guided_regex: 'a+' }),
    (e) => e.status === 400 && /tokenizer/.test(e.message));
});
