// The chat page (GET /) in a real browser: Debian's headless Chromium, driven by
// playwright-core, against a running `qinfer serve` (the demo model: real tokenizer and
// template, random weights). Types a message, waits for the streamed reply, checks the
// reasoning fold, the Markdown renderer and the tokens/s line, and saves a screenshot.
// With QINFER_IMAGE (a PNG; the mm suite, on a model with a vision tower) it also attaches
// the image and checks the request's image_url data: part and the prompt token count
// (QINFER_IMAGE_PROMPT_TOKENS: what `qinfer generate --chat --image` counts for the prompt).
//   QINFER_BASE (http://127.0.0.1:PORT), QINFER_API_KEY, QINFER_SCREENSHOT (a .png path)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const base = process.env.QINFER_BASE;
const key = process.env.QINFER_API_KEY || '';
const shot = process.env.QINFER_SCREENSHOT || path.join(os.tmpdir(), 'qinfer-webui.png');
const exe = process.env.QINFER_CHROMIUM || '/usr/bin/chromium';

const image = process.env.QINFER_IMAGE;

// A page of the chat UI at `base` in headless Chromium, loaded (the model line filled in).
async function withPage(fn) {
  assert.ok(fs.existsSync(exe), `${exe} missing (scripts/install-deps.sh installs Debian's chromium)`);
  const browser = await chromium.launch({
    executablePath: exe, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],  // playwright makes (and removes) a temporary profile
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.addInitScript((k) => localStorage.setItem('qinfer-api-key', k), key);
    await page.goto(base + '/');
    await page.waitForFunction(() => !document.getElementById('model').textContent.startsWith('…'));
    await fn(page);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
  }
}

test('chat page streams a reply in headless Chromium', { timeout: 180000 }, () => withPage(async (page) => {
  assert.match(await page.textContent('#model'), /context \d+/);
  // The Markdown renderer, on fixed text (the demo model's replies are noise).
  const html = await page.evaluate(() => renderMarkdown('# T\n\nsome **bold** and `code`\n\n```js\nlet a = 1 < 2;\n```\n- x\n- y'));
  assert.match(html, /<h1>T<\/h1>/);
  assert.match(html, /<strong>bold<\/strong>/);
  assert.match(html, /<code>code<\/code>/);
  assert.match(html, /<pre><span class="lang">js<\/span><code class="language-js">let a = 1 &lt; 2;<\/code><\/pre>/);
  assert.match(html, /<ul><li>x<\/li><li>y<\/li><\/ul>/);

  await page.fill('#max-tokens', '24');
  await page.fill('#input', 'Hello! Write a haiku about the sea.');
  await page.press('#input', 'Enter');
  await page.waitForSelector('.msg.assistant.done', { timeout: 120000 });
  const stats = await page.textContent('.msg.assistant .stats');
  assert.match(stats, /(\d+) tokens · [\d.]+ tokens\/s/, stats);
  assert.equal(Number(stats.match(/^(\d+) tokens/)[1]), 24);
  const reply = await page.evaluate(() => {
    const m = document.querySelector('.msg.assistant');
    const d = m.querySelector('details.reasoning');
    return { text: m.querySelector('.content').textContent + (d ? d.textContent : ''), folded: d ? !d.open : null,
      error: m.classList.contains('error') };
  });
  assert.equal(reply.error, false, reply.text);
  assert.ok(reply.text.length > 0, 'the reply is empty');
  if (reply.folded !== null) assert.equal(reply.folded, true, 'reasoning is shown folded');
  await page.screenshot({ path: shot, fullPage: true });
}));

test('an attached image is sent as an image_url data: part', { timeout: 180000, skip: !image }, () => withPage(async (page) => {
  const bodies = [];
  page.on('request', (r) => { if (r.url().endsWith('/v1/chat/completions')) bodies.push(JSON.parse(r.postData())); });
  await page.fill('#max-tokens', '8');
  // Attach, remove, attach again: the thumbnail shows, and "remove" drops the attachment.
  await page.setInputFiles('#file', image);
  await page.waitForSelector('#attached img');
  await page.click('#detach');
  assert.equal(await page.$('#attached img'), null);
  await page.setInputFiles('#file', image);
  await page.waitForSelector('#attached img');
  await page.fill('#input', 'Describe this image.');
  await page.press('#input', 'Enter');
  await page.waitForSelector('.msg.assistant.done', { timeout: 120000 });
  assert.equal(bodies.length, 1);
  const content = bodies[0].messages[0].content;
  assert.equal(content[0].type, 'image_url');
  assert.equal(content[0].image_url.url, 'data:image/png;base64,' + fs.readFileSync(image).toString('base64'));
  assert.deepEqual(content[1], { type: 'text', text: 'Describe this image.' });
  const m = await page.evaluate(() => {
    const a = document.querySelector('.msg.assistant');
    return { error: a.classList.contains('error'), text: a.textContent, stats: a.querySelector('.stats').textContent,
      thumb: !!document.querySelector('.msg.user img.thumb'), attached: document.getElementById('attached').textContent };
  });
  assert.equal(m.error, false, m.text);
  assert.ok(m.thumb, 'the user message shows the image');
  assert.equal(m.attached, '', 'the attachment is cleared once sent');
  const want = process.env.QINFER_IMAGE_PROMPT_TOKENS;
  if (want) assert.match(m.stats, new RegExp(`prompt ${want} tokens`), m.stats);
}));
