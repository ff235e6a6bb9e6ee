// Images through `qinfer serve` with the official openai client, on the demo model with a
// random vision tower (qinfer synth --demo --vision). Started by run.sh (mm suite), which
// passes QINFER_BASE_URL, QINFER_API_KEY, QINFER_MODEL_NAME, QINFER_IMAGE (a PNG),
// QINFER_MEDIA_DIR (the server's --allowed-local-media-path, holding QINFER_IMAGE's file
// name), and what `qinfer generate --image QINFER_IMAGE --chat --no-think` printed for the
// same prompt: QINFER_GREEDY_FILE (its stdout: the greedy text of 12 tokens and a newline)
// and QINFER_GREEDY_PROMPT_TOKENS (from its log).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { basename } from 'node:path';
import OpenAI from 'openai';

const base = process.env.QINFER_BASE_URL;
const model = process.env.QINFER_MODEL_NAME;
const image = process.env.QINFER_IMAGE;
const mediaDir = process.env.QINFER_MEDIA_DIR;
const greedyText = readFileSync(process.env.QINFER_GREEDY_FILE, 'utf8').replace(/\n$/, '');
const greedyPromptTokens = Number(process.env.QINFER_GREEDY_PROMPT_TOKENS);
if (!base || !/^http:\/\/127\.0\.0\.1:\d+\/v1$/.test(base)) throw new Error('QINFER_BASE_URL must be a loopback URL');
if (!greedyText || !(greedyPromptTokens > 0)) throw new Error('QINFER_GREEDY_FILE / _PROMPT_TOKENS missing');
const client = new OpenAI({ baseURL: base, apiKey: process.env.QINFER_API_KEY, maxRetries: 0, timeout: 120_000 });

const png = readFileSync(image);
const dataUrl = `data:image/png;base64,${png.toString('base64')}`;
const imagePart = (url) => ({ type: 'image_url', image_url: { url } });
const prompt = 'Describe this image.';
// The prompt `qinfer generate --image FILE --prompt TEXT --chat --no-think` renders.
const greedyRequest = (content, extra = {}) => ({
  model, messages: [{ role: 'user', content }], max_tokens: 12, temperature: 0,
  chat_template_kwargs: { enable_thinking: false }, ...extra,
});

test('one image, not streaming: greedy text and prompt_tokens equal qinfer generate --image', async () => {
  const r = await client.chat.completions.create(greedyRequest([imagePart(dataUrl), { type: 'text', text: prompt }]));
  assert.equal(r.choices[0].message.content, greedyText);
  assert.equal(r.usage.prompt_tokens, greedyPromptTokens);
});

test('one image, streaming: the same text, usage in the last chunk', async () => {
  const stream = await client.chat.completions.create(greedyRequest([imagePart(dataUrl), { type: 'text', text: prompt }],
    { stream: true, stream_options: { include_usage: true } }));
  let text = '';
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.choices.length && chunk.choices[0].delta.content) text += chunk.choices[0].delta.content;
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, greedyText);
  assert.equal(usage.prompt_tokens, greedyPromptTokens);
});

test('the image by file:// under --allowed-local-media-path and as input_image give the same answer', async () => {
  const url = `file://${mediaDir}/${basename(image)}`;
  const a = await client.chat.completions.create(greedyRequest([imagePart(url), { type: 'text', text: prompt }]));
  assert.equal(a.choices[0].message.content, greedyText);
  const b = await client.chat.completions.create(greedyRequest([{ type: 'input_image', image_url: dataUrl }, { type: 'text', text: prompt }]));
  assert.equal(b.choices[0].message.content, greedyText);
});

test('two images, one fetched by the server over http from 127.0.0.1', async () => {
  const media = createServer((req, res) => {
    if (req.url === '/img.png') { res.writeHead(200, { 'Content-Type': 'image/png' }); res.end(png); return; }
    res.writeHead(404); res.end();
  });
  await new Promise((ok) => media.listen(0, '127.0.0.1', ok));
  try {
    const url = `http://127.0.0.1:${media.address().port}/img.png`;
    const r = await client.chat.completions.create(greedyRequest(
      [imagePart(dataUrl), { type: 'text', text: 'and' }, imagePart(url), { type: 'text', text: prompt }]));
    assert.equal(r.object, 'chat.completion');
    // Two images of the same size: twice the image tokens of one, plus the text.
    const one = greedyPromptTokens;
    assert.ok(r.usage.prompt_tokens > one, `${r.usage.prompt_tokens} vs ${one}`);
    await assert.rejects(client.chat.completions.create(greedyRequest([imagePart(`http://127.0.0.1:${media.address().port}/none.png`)])),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages[0].content[0].image_url' && /404/.test(e.message));
  } finally {
    media.close();
  }
});

test('several image requests at once are batched and each gets the greedy answer', async () => {
  const rs = await Promise.all([0, 1, 2, 3].map(() =>
    client.chat.completions.create(greedyRequest([imagePart(dataUrl), { type: 'text', text: prompt }]))));
  for (const r of rs) assert.equal(r.choices[0].message.content, greedyText);
});

test('one image too many is a 400 naming messages', async () => {
  await assert.rejects(client.chat.completions.create(greedyRequest(
    [imagePart(dataUrl), imagePart(dataUrl), imagePart(dataUrl), { type: 'text', text: prompt }])),
  (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages' && /at most 2 image/.test(e.message));
});

test('bad images are 400s naming the part', async () => {
  const cases = [
    ['data:image/png;base64,%%%', /base64/],
    ['data:image/png;base64,' + Buffer.from('not a picture').toString('base64'), /image/],
    ['file:///etc/passwd', /subpath of --allowed-local-media-path/],
    ['gopher://127.0.0.1/x', /unsupported image URL/],
  ];
  for (const [url, re] of cases) {
    await assert.rejects(client.chat.completions.create(greedyRequest([{ type: 'text', text: 'x' }, imagePart(url)])),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages[0].content[1].image_url' && re.test(e.message),
      url.slice(0, 40));
  }
  await assert.rejects(client.chat.completions.create(greedyRequest([{ type: 'video_url', video_url: { url: 'http://127.0.0.1/v.mp4' } }])),
    (e) => e.status === 400 && e.param === 'messages[0].content[0].type' && /video/.test(e.message));
});
