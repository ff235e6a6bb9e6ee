// Scale-out through nginx (deploy/nginx/qinfer.conf): two replicas behind it on loopback.
// The openai client goes through nginx (streaming, concurrent); one replica is stopped with
// SIGTERM in the middle of a stream: that stream still completes (drain), and new requests
// keep succeeding on the other replica.
//   QINFER_LB (nginx base, http://127.0.0.1:PORT), QINFER_REPLICAS (base1,base2),
//   QINFER_REPLICA_PIDS (pid1,pid2), QINFER_MODEL_NAME, QINFER_API_KEY
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const lb = process.env.QINFER_LB;
const replicas = process.env.QINFER_REPLICAS.split(',');
const pids = process.env.QINFER_REPLICA_PIDS.split(',').map(Number);
const model = process.env.QINFER_MODEL_NAME;
const apiKey = process.env.QINFER_API_KEY;
const client = new OpenAI({ baseURL: lb + '/v1', apiKey, maxRetries: 0, timeout: 60000 });

async function running(base) {
  try {
    const text = await (await fetch(base + '/metrics')).text();
    const line = text.split('\n').find((l) => l.startsWith('vllm:num_requests_running{'));
    return Number(line.split(' ').pop());
  } catch (e) { return -1; }
}
// Whether a replica still answers (its process is a child of run.sh, which reaps it).
const alive = async (base) => { try { await fetch(base + '/version'); return true; } catch (e) { return false; } };

test('requests spread over both replicas and stream through nginx', async () => {
  const seen = new Set();
  // 32 keys: the consistent hash places them by the replicas' (random) ports, and with 8 all of
  // them fell on one replica in 1 run of 9 (session 24); even a 75/25 split now misses 1 in 10^4.
  const done = await Promise.all(Array.from({ length: 32 }, async (_, i) => {
    const stream = await client.completions.create(
      { model, prompt: [1, 2, 3 + i], max_tokens: 12, stream: true, user: `conv-${i}` });
    let chunks = 0, finish = null;
    for await (const c of stream) { chunks++; if (c.choices[0]?.finish_reason) finish = c.choices[0].finish_reason; }
    return { chunks, finish };
  }));
  for (const d of done) { assert.ok(d.chunks >= 2, 'streamed in chunks'); assert.ok(d.finish); }
  // Both replicas did work: their generation counters moved.
  for (const base of replicas) {
    const text = await (await fetch(base + '/metrics')).text();
    const line = text.split('\n').find((l) => l.startsWith('vllm:generation_tokens_total{'));
    if (Number(line.split(' ').pop()) > 0) seen.add(base);
  }
  assert.equal(seen.size, 2, 'both replicas served requests');
});

test('one conversation key sticks to one replica', async () => {
  const before = await Promise.all(replicas.map((b) => fetch(b + '/metrics').then((r) => r.text())));
  const count = (t) => Number(t.split('\n').find((l) => l.startsWith('vllm:request_success_total{') && l.includes('"length"')).split(' ').pop());
  for (let i = 0; i < 6; i++) {
    const r = await client.completions.create({ model, prompt: [5, 6, 7], max_tokens: 2, ignore_eos: true },  // sampled: EOS must not end it early
      { headers: { 'X-Session-Id': 'conversation-42' } });
    assert.equal(r.choices[0].finish_reason, 'length');
  }
  const after = await Promise.all(replicas.map((b) => fetch(b + '/metrics').then((r) => r.text())));
  const moved = replicas.map((_, i) => count(after[i]) - count(before[i]));
  assert.deepEqual(moved.slice().sort(), [0, 6], `per replica: ${moved}`);
});

test('a replica stopped mid-run: its stream drains, new requests still succeed', async () => {
  // A long stream pinned by its key; find the replica running it.
  const stream = await client.completions.create(
    { model, prompt: [9, 9, 9], max_tokens: Number(process.env.QINFER_LONG_TOKENS || 3000), ignore_eos: true, stream: true },
    { headers: { 'X-Session-Id': 'victim' } });
  const it = stream[Symbol.asyncIterator]();
  let chunks = 0, finish = null;
  const first = await it.next();
  assert.equal(first.done, false);
  chunks++;
  let victim = -1;
  for (let t = 0; t < 100 && victim < 0; t++) {
    const r = await Promise.all(replicas.map(running));
    victim = r.findIndex((n) => n > 0);
    if (victim < 0) await new Promise((r) => setTimeout(r, 20));
  }
  assert.ok(victim >= 0, 'found the replica running the stream');
  process.kill(pids[victim], 'SIGTERM');
  // New requests (concurrent, some streaming) all succeed while it drains and after it is gone.
  const results = await Promise.all(Array.from({ length: 6 }, async (_, i) => {
    if (i % 2) {
      const s = await client.completions.create({ model, prompt: [4, 4, i], max_tokens: 6, stream: true },
        { headers: { 'X-Session-Id': 'victim' } });
      let n = 0;
      for await (const c of s) n += c.choices.length ? 1 : 0;
      return n > 0;
    }
    // ignore_eos: these sample, and an early EOS would end one before its length (a flake, session 24).
    const r = await client.completions.create({ model, prompt: [3, 3, i], max_tokens: 4, ignore_eos: true },
      { headers: { 'X-Session-Id': 'victim' } });
    return r.choices[0].finish_reason === 'length';
  }));
  assert.deepEqual(results, [true, true, true, true, true, true]);
  for (;;) {
    const n = await it.next();
    if (n.done) break;
    chunks++;
    if (n.value.choices[0]?.finish_reason) finish = n.value.choices[0].finish_reason;
  }
  assert.equal(finish, 'length', 'the stream on the stopped replica ran to its end');
  for (let t = 0; t < 200 && await alive(replicas[victim]); t++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(await alive(replicas[victim]), false, 'the stopped replica exited');
  const after = await client.completions.create({ model, prompt: [1, 1], max_tokens: 3 },
    { headers: { 'X-Session-Id': 'victim' } });
  assert.equal(after.choices[0].finish_reason, 'length');
});
