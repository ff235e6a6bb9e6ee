// End-to-end tests of `qinfer serve` with the official openai client. Started by run.sh,
// which passes QINFER_BASE_URL (loopback only), QINFER_API_KEY, QINFER_MODEL_NAME and
// QINFER_MODE: "ids" (a fixture without tokenizer) or "chat" (the demo model).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const base = process.env.QINFER_BASE_URL;
const mode = process.env.QINFER_MODE;
const model = process.env.QINFER_MODEL_NAME;
const apiKey = process.env.QINFER_API_KEY;
if (!base || !/^http:\/\/127\.0\.0\.1:\d+\/v1$/.test(base)) throw new Error('QINFER_BASE_URL must be a loopback URL');
const client = new OpenAI({ baseURL: base, apiKey, maxRetries: 0, timeout: 120_000 });
const chatOnly = { skip: mode !== 'chat' };
const idsOnly = { skip: mode !== 'ids' };

const tools = [{
  type: 'function',
  function: {
    name: 'get_weather', description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] },
  },
}];

async function metric(name) {
  const text = await (await fetch(base.replace(/\/v1$/, '/metrics'))).text();
  const line = text.split('\n').find((l) => l.startsWith(name + '{') || l.startsWith(name + ' '));
  return line ? Number(line.split(' ').pop()) : NaN;
}

test('models lists the served name', async () => {
  const list = await client.models.list();
  assert.equal(list.data[0].id, model);
  assert.equal(list.data[0].object, 'model');
});

test('unknown model is a 404 NotFoundError', async () => {
  await assert.rejects(client.completions.create({ model: 'nope', prompt: [1, 2], max_tokens: 2 }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404 && /nope/.test(e.message));
});

test('bad field type is a 400 naming the field', async () => {
  await assert.rejects(client.completions.create({ model, prompt: [1, 2], max_tokens: 2, temperature: 'hot' }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && /temperature/.test(e.message));
});

test('over-context prompt is a 400', async () => {
  await assert.rejects(client.completions.create({ model, prompt: Array(300000).fill(3), max_tokens: 2 }),
    (e) => e.status === 400 && /maximum context length/.test(e.message));
});

test('completions with token ids, non-streaming', idsOnly, async () => {
  const r = await client.completions.create({ model, prompt: [1, 2, 3, 4], max_tokens: 6, temperature: 0 });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices.length, 1);
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.equal(r.usage.prompt_tokens, 4);
  assert.equal(r.choices[0].token_ids.length, r.usage.completion_tokens);
});

test('completions streaming with usage', idsOnly, async () => {
  const stream = await client.completions.create({
    model, prompt: [5, 6, 7], max_tokens: 5, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  let ids = [], finish = null, usage = null;
  for await (const c of stream) {
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) {
      ids.push(...(ch.token_ids ?? []));
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  assert.ok(finish);
  assert.equal(usage.completion_tokens, ids.length);
});

test('greedy outputs under 32 concurrent streams equal one-by-one runs', async () => {
  const prompts = Array.from({ length: 32 }, (_, i) => Array.from({ length: 3 + (i % 7) }, (_, k) => 1 + ((i * 37 + k * 11) % 500)));
  const req = (p) => ({ model, prompt: p, max_tokens: 12, temperature: 0, ignore_eos: true, return_token_ids: true });
  const sequential = [];
  for (const p of prompts) sequential.push((await client.completions.create(req(p))).choices[0].token_ids);
  const concurrent = await Promise.all(prompts.map(async (p) => {
    const ids = [];
    for await (const c of await client.completions.create({ ...req(p), stream: true })) {
      for (const ch of c.choices) ids.push(...(ch.token_ids ?? []));
    }
    return ids;
  }));
  for (let i = 0; i < prompts.length; i++) {
    assert.equal(sequential[i].length, 12);
    assert.deepEqual(concurrent[i], sequential[i], `request ${i}`);
  }
});

test('chat without a tokenizer is a clear 400', idsOnly, async () => {
  await assert.rejects(client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] }),
    (e) => e.status === 400 && /tokenizer/.test(e.message));
});

test('chat non-streaming', chatOnly, async () => {
  const r = await client.chat.completions.create({
    model, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello!' }],
    max_tokens: 8, temperature: 0.7, seed: 7,
  });
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /^chatcmpl-/);
  const m = r.choices[0].message;
  assert.equal(m.role, 'assistant');
  assert.ok(m.content === null || typeof m.content === 'string');
  assert.ok(m.reasoning_content === null || typeof m.reasoning_content === 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.ok(r.usage.completion_tokens <= 8);
});

test('chat streaming with include_usage', chatOnly, async () => {
  const stream = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Count to three.' }], max_tokens: 10, stream: true,
    stream_options: { include_usage: true },
  });
  let first = null, finish = null, usage = null, n = 0;
  for await (const c of stream) {
    n++;
    assert.equal(c.object, 'chat.completion.chunk');
    if (!first && c.choices.length) first = c.choices[0].delta;
    if (c.choices[0]?.finish_reason) finish = c.choices[0].finish_reason;
    if (c.usage) usage = c.usage;
  }
  assert.equal(first.role, 'assistant');
  assert.ok(['stop', 'length'].includes(finish));
  assert.ok(usage && usage.completion_tokens > 0 && usage.completion_tokens <= 10);
  assert.ok(n >= 3);
});

test('same seed, same sampled answer; n=2 gives two choices', chatOnly, async () => {
  const req = { model, messages: [{ role: 'user', content: 'Pick a word.' }], max_tokens: 6, temperature: 1.0, seed: 1234 };
  const a = await client.chat.completions.create(req);
  const b = await client.chat.completions.create(req);
  assert.deepEqual(a.choices[0].message, b.choices[0].message);
  const two = await client.chat.completions.create({ ...req, n: 2, logprobs: true, top_logprobs: 2 });
  assert.equal(two.choices.length, 2);
  assert.equal(two.choices[1].index, 1);
  const lp = two.choices[0].logprobs.content;
  assert.ok(lp.length > 0 && lp[0].top_logprobs.length === 2 && lp[0].logprob <= 0);
});

test('thinking disabled: no reasoning', chatOnly, async () => {
  const r = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5,
    chat_template_kwargs: { enable_thinking: false },
  });
  assert.equal(r.choices[0].message.reasoning_content ?? null, null);
});

test('tools: named tool_choice returns that call (non-streaming)', chatOnly, async () => {
  const r = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools, max_tokens: 12,
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
  });
  const calls = r.choices[0].message.tool_calls;
  assert.equal(calls.length, 1);
  assert.equal(calls[0].type, 'function');
  assert.equal(calls[0].function.name, 'get_weather');
  assert.equal(typeof JSON.parse(calls[0].function.arguments), 'object');
  assert.equal(r.choices[0].finish_reason === 'length' ? 'length' : 'stop', r.choices[0].finish_reason);
});

test('tools: named tool_choice streamed', chatOnly, async () => {
  const stream = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools, max_tokens: 12, stream: true,
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
  });
  let name = '', args = '', id = '';
  for await (const c of stream) {
    for (const t of c.choices[0]?.delta?.tool_calls ?? []) {
      if (t.id) id = t.id;
      if (t.function?.name) name += t.function.name;
      if (t.function?.arguments) args += t.function.arguments;
    }
  }
  assert.equal(name, 'get_weather');
  assert.ok(id.length > 0);
  assert.equal(typeof JSON.parse(args), 'object');
});

test('tools: auto tool choice and tool results in history', chatOnly, async () => {
  const r = await client.chat.completions.create({
    model, tools, max_tokens: 6,
    messages: [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    ],
  });
  assert.ok(['stop', 'length', 'tool_calls'].includes(r.choices[0].finish_reason));
});

test('too many images is a 400', chatOnly, async () => {
  const img = { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } };
  await assert.rejects(client.chat.completions.create({
    model, messages: [{ role: 'user', content: [img, img, img, { type: 'text', text: 'x' }] }],
  }), (e) => e.status === 400 && /image/.test(e.message));
});

test('completions with a text prompt, echo and logprobs', chatOnly, async () => {
  const r = await client.completions.create({ model, prompt: 'Once upon', max_tokens: 4, echo: true, logprobs: 2 });
  assert.ok(r.choices[0].text.startsWith('Once upon'));
  // As vLLM: with echo the logprobs cover the prompt too; the first prompt token has none.
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.length, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.equal(lp.token_logprobs[0], null);
  assert.ok(lp.token_logprobs.slice(1).every((x) => typeof x === 'number' && x <= 0));
  assert.equal(lp.tokens.slice(0, r.usage.prompt_tokens).join(''), 'Once upon');
});

test('a client that goes away frees its slot', async () => {
  const before = await metric('qinfer_requests_aborted_total');
  const ac = new AbortController();
  const stream = await client.completions.create(
    // Long enough that it cannot finish before the abort lands, even on the fast fixture
    // (~2000 tokens/s): a request that finishes first counts as finished, not aborted.
    { model, prompt: mode === 'ids' ? [1, 2, 3] : 'Tell me a long story', max_tokens: mode === 'ids' ? 4000 : 2000,
      ignore_eos: true, stream: true }, { signal: ac.signal });
  let got = 0;
  try {
    for await (const c of stream) { if (++got === 3) ac.abort(); }
  } catch (e) { /* aborted */ }
  let after = before;
  for (let i = 0; i < 50 && after <= before; i++) {
    await new Promise((r) => setTimeout(r, 100));
    after = await metric('qinfer_requests_aborted_total');
  }
  assert.ok(after > before, `aborted count ${before} -> ${after}`);
  assert.equal(await metric('vllm:num_requests_running'), 0);
});
