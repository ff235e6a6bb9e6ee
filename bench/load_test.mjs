#!/usr/bin/env node
// Load test of `qinfer serve` over loopback: a bounded number of requests (and a time cap),
// a fixed number of concurrent streaming clients; reports requests/s, latency p50/p99,
// time to first token p50/p99 and generated tokens/s. Plain fetch, no dependencies.
//   node bench/load_test.mjs --serve MODEL_DIR [--qinfer build/qinfer]   (starts its own server)
//   node bench/load_test.mjs --url http://127.0.0.1:8000 [--api-key KEY]  (an already running one)
// Options: --requests 200 --concurrency 16 --max-tokens 32 --time-limit 120 --mode completions|chat
//          --prompt-tokens 16 (id prompts for completions; chat sends a short text message)
import { spawn } from 'node:child_process';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1] && !all[i + 1].startsWith('--') ? all[i + 1] : 'true']);
  return acc;
}, []));
const requests = Number(args.requests ?? 200);
const concurrency = Number(args.concurrency ?? 16);
const maxTokens = Number(args['max-tokens'] ?? 32);
const timeLimit = Number(args['time-limit'] ?? 120);
const promptTokens = Number(args['prompt-tokens'] ?? 16);
const mode = args.mode ?? 'completions';
if (!(requests > 0 && requests <= 10000 && concurrency > 0 && concurrency <= 256 && timeLimit > 0 && timeLimit <= 1800)) {
  throw new Error('bounds: 0 < requests <= 10000, 0 < concurrency <= 256, 0 < time-limit <= 1800 s');
}

let server = null;
let url = args.url;
if (args.serve) {
  const bin = args.qinfer ?? 'build/qinfer';
  server = spawn(bin, ['serve', args.serve, '--host', '127.0.0.1', '--port', '0', '--served-model-name', 'load',
    '--max-num-seqs', String(Math.max(concurrency, 1))], { stdio: ['ignore', 'pipe', 'inherit'] });
  url = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) resolve(m[1]);
    });
    server.on('exit', (c) => reject(new Error(`server exited with ${c}`)));
    setTimeout(() => reject(new Error('server did not start in 300 s')), 300_000);
  });
}
const host = new URL(url).hostname;
if (!['127.0.0.1', 'localhost', '[::1]', '::1'].includes(host)) throw new Error(`loopback only, got ${host}`);
const headers = { 'Content-Type': 'application/json' };
if (args['api-key']) headers.Authorization = `Bearer ${args['api-key']}`;
for (let i = 0; i < 600; i++) {
  try { if ((await fetch(`${url}/health`)).ok) break; } catch { /* not yet */ }
  await new Promise((r) => setTimeout(r, 200));
}
const model = (await (await fetch(`${url}/v1/models`, { headers })).json()).data[0].id;

function body(i) {
  const common = { model, max_tokens: maxTokens, temperature: 0.8, seed: i, stream: true,
    stream_options: { include_usage: true }, ignore_eos: true };
  if (mode === 'chat') return { ...common, messages: [{ role: 'user', content: `Request ${i}: tell me something.` }] };
  return { ...common, prompt: Array.from({ length: promptTokens }, (_, k) => 1 + ((i * 131 + k * 17) % 400)) };
}

async function one(i) {
  const t0 = performance.now();
  let ttft = null, tokens = 0;
  const res = await fetch(`${url}/v1/${mode === 'chat' ? 'chat/completions' : 'completions'}`,
    { method: 'POST', headers, body: JSON.stringify(body(i)) });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const dec = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body) {
    buf += dec.decode(chunk, { stream: true });
    let k;
    while ((k = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, k); buf = buf.slice(k + 2);
      if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
      const j = JSON.parse(ev.slice(6));
      if (ttft === null && j.choices?.length) ttft = performance.now() - t0;
      if (j.usage) tokens = j.usage.completion_tokens;
    }
  }
  return { latency: performance.now() - t0, ttft: ttft ?? NaN, tokens };
}

const results = [];
let next = 0, errors = 0;
const deadline = performance.now() + timeLimit * 1000;
const start = performance.now();
await Promise.all(Array.from({ length: concurrency }, async () => {
  while (next < requests && performance.now() < deadline) {
    const i = next++;
    try { results.push(await one(i)); } catch (e) { errors++; if (errors < 4) console.error(String(e)); }
  }
}));
const wall = (performance.now() - start) / 1000;
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const lat = results.map((r) => r.latency), ttft = results.map((r) => r.ttft);
const toks = results.reduce((a, r) => a + r.tokens, 0);
const report = {
  url, model, mode, requests_done: results.length, errors, concurrency, max_tokens: maxTokens,
  wall_s: +wall.toFixed(2), requests_per_s: +(results.length / wall).toFixed(2),
  latency_p50_ms: +pct(lat, 0.5).toFixed(1), latency_p99_ms: +pct(lat, 0.99).toFixed(1),
  ttft_p50_ms: +pct(ttft, 0.5).toFixed(1), ttft_p99_ms: +pct(ttft, 0.99).toFixed(1),
  generated_tokens_per_s: +(toks / wall).toFixed(1),
};
console.log(JSON.stringify(report, null, 2));
if (server) server.kill('SIGTERM');
process.exit(errors ? 1 : 0);
