// Builds the tokenizer golden corpus: >= 2,000 strings (hand-written cases per script and
// edge case, wikitext-2 test lines, seeded random mixtures) and their ids from the Rust
// `tokenizers` crate (npm package `tokenizers`, the binding transformers' fast tokenizer
// uses) run on the Qwen3.5 tokenizer.json, plus the added tokens of tokenizer_config.json
// the way transformers adds them. Also a Unicode probe set (every combining mark and
// canonical composition, in context) for the normaliser.
//
//   cd tools/tokenizer_golden && npm ci && node gen_golden.mjs
//
// Reads only the repository (assets/tokenizer/qwen3.5, tests/data/wikitext-2). Writes
//   tests/data/tokenizer/golden_corpus.json  {"cases": [{"text", "ids", "nfc"?}]}
//   tests/data/tokenizer/unicode_probe.json  {"cases": [{"text", "ids"}]}
// "nfc" is present only when HF's NFC normaliser changes the text; it is what
// decode(encode(text)) must give back. The C++ tests read these files; npm is not
// needed at test time.
import { AddedToken, Tokenizer } from "tokenizers";
import crypto from "crypto";
import fs from "fs";
import path from "path";
import { createRequire } from "module";
import { fileURLToPath } from "url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");
const tokDir = path.join(repo, "assets/tokenizer/qwen3.5");
const tokBytes = fs.readFileSync(path.join(tokDir, "tokenizer.json"));
const tokenizer = Tokenizer.fromFile(path.join(tokDir, "tokenizer.json"));
const rustVersion = createRequire(import.meta.url)("tokenizers/package.json").version;
// transformers (PreTrainedTokenizerFast.__init__) adds tokenizer_config.json's added_tokens_decoder
// entries that tokenizer.json lacks, in id order, as special/added tokens with their flags.
{
  const cfg = JSON.parse(fs.readFileSync(path.join(tokDir, "tokenizer_config.json")));
  const have = new Set(JSON.parse(tokBytes).added_tokens.map((t) => t.id));
  const extra = Object.entries(cfg.added_tokens_decoder || {}).map(([id, t]) => [Number(id), t])
                      .filter(([id]) => !have.has(id)).sort((a, b) => a[0] - b[0]);
  for (const [id, t] of extra) {
    tokenizer.addAddedTokens([new AddedToken(t.content, t.special, {
      singleWord: t.single_word, leftStrip: t.lstrip, rightStrip: t.rstrip, normalized: t.normalized })]);
    const got = tokenizer.tokenToId(t.content);
    if (got !== id) throw new Error(`added token ${t.content} got id ${got}, config says ${id}`);
  }
  console.log(`added ${extra.length} tokens from tokenizer_config.json`);
}
const normalizer = tokenizer.getNormalizer();

// Seeded PRNG (mulberry32) so the corpus is reproducible.
let seed = 0x5eed1234;
function rand() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (arr) => arr[Math.floor(rand() * arr.length)];
const randInt = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));

const cases = [];
const seen = new Set();
function add(text) {
  if (typeof text !== "string" || seen.has(text)) return;
  seen.add(text);
  cases.push(text);
}

// ---- Hand-written cases by category -------------------------------------------------------
const english = [
  "Hello world", "hello world", "HELLO WORLD", "Hello, world!", " Hello world", "Hello world ",
  "The quick brown fox jumps over the lazy dog.", "I'm sure it's fine, isn't it? We've been, they'll go, he'd say.",
  "DON'T SHOUT, I'LL HEAR YOU. IT'S FINE. WE'VE GOT IT. THEY'RE HERE. I'M OK. SHE'D GO.",
  "don't Don't DON'T dOn'T", "'s 's 'S 't 're 've 'm 'll 'd", "rock'n'roll", "''quoted''", "'tis the season",
  "O'Neill's", "Mr. Smith went to Washington.", "e.g. i.e. etc.", "A", "a", "I", "",
  "supercalifragilisticexpialidocious", "Pneumonoultramicroscopicsilicovolcanoconiosis",
  "camelCaseIdentifier snake_case_identifier kebab-case-identifier SCREAMING_SNAKE",
  "It was the best of times, it was the worst of times, it was the age of wisdom...",
  "Email me at someone@example.com or visit https://example.org/path?q=1&r=2#frag",
  "¡Hola! ¿Qué tal? Ça va? Naïve café résumé coöperate façade jalapeño",
  "Straße Größe Fußgängerübergänge", "Ærøskøbing Ålborg Øresund", "Łódź Kraków Gdańsk źdźbło",
  "Ελληνικά: Καλημέρα κόσμε", "Русский: Съешь же ещё этих мягких французских булок, да выпей чаю.",
  "Українська мова: ґ є і ї", "Türkçe: İstanbul ıslak ğüşöç", "Tiếng Việt: Xin chào thế giới, người Việt Nam",
];
const cjk = [
  "人工智能", "你好，世界！", "生活的真谛是", "我爱自然语言处理。", "中华人民共和国成立于1949年10月1日。",
  "日本語のテキストです。ひらがな、カタカナ、漢字。", "東京都渋谷区", "ｶﾀｶﾅ 半角カナ ＡＢＣ全角英字 １２３",
  "한국어 텍스트입니다. 안녕하세요!", "대한민국 서울특별시", "漢字かなカナ한글ABC123混在",
  "「引用」『二重』【括弧】〈山括弧〉", "。、・ー～！？", "這是繁體中文的句子。", "𠀀𠀁𠀂 𪜀 𫝀 (CJK Ext B/C/D)",
  "你好 world 世界 hello", "一二三四五六七八九十百千万亿", "〇一二三", "㊀㊁㊂ ㋀ ㍿",
];
const rtlIndic = [
  "مرحبا بالعالم", "العربية: اللغة العربية جميلة جداً.", "اَلْعَرَبِيَّةُ مع تشكيل", "١٢٣٤٥٦٧٨٩٠ أرقام عربية",
  "שלום עולם", "עִבְרִית עם ניקוד", "فارسی: سلام دنیا ۱۲۳", "اردو: ہیلو دنیا",
  "नमस्ते दुनिया", "हिन्दी भाषा में लिखा गया वाक्य।", "क्षत्रिय ज्ञान श्री", "०१२३४५६७८९ देवनागरी अंक",
  "বাংলা ভাষা", "தமிழ் மொழி", "తెలుగు భాష", "ಕನ್ನಡ", "മലയാളം", "ગુજરાતી", "ਪੰਜਾਬੀ", "සිංහල",
  "ภาษาไทย", "สวัสดีชาวโลก", "กรุงเทพมหานคร อมรรัตนโกสินทร์", "๑๒๓๔๕ เลขไทย", "ปี ird ด",
  "ພາສາລາວ", "ភាសាខ្មែរ", "မြန်မာဘာသာ", "ქართული ენა", "Հայերեն լեզու", "አማርኛ ቋንቋ", "ᐃᓄᒃᑎᑐᑦ", "ᚠᚢᚦᚨᚱᚲ",
];
const emoji = [
  "😊", "😀😃😄😁", "👍🏽 👍🏿 👋🏻", "👨‍👩‍👧‍👦 family", "👩‍💻 coder", "🏳️‍🌈 flag", "🏴‍☠️ pirate",
  "🇺🇸🇬🇧🇯🇵🇩🇪🇫🇷", "🇺🇸 and 🇨🇳", "🏴󠁧󠁢󠁳󠁣󠁴󠁿 Scotland", "❤️ ❤ ♥️", "1️⃣ 2️⃣ #️⃣ *️⃣", "🧑🏾‍🤝‍🧑🏼",
  "I love 🍕 and 🍣!", "🚀🚀🚀🚀🚀", "👁️‍🗨️", "☃ ☄ ★ ☆ ♠ ♣ ♦", "🤷‍♂️🤦‍♀️", "emoji at end 🎉", "🎉emoji at start",
  "😊\n😊\n", "text😊text", "😊😊 😊  😊",
];
const code = [
  "def hello():\n    print(\"Hello, world!\")\n",
  "int main(int argc, char** argv) {\n  return 0;\n}\n",
  "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
  "const x = await fetch(`${base}/api?id=${id}`).then((r) => r.json());",
  "#include <vector>\n#include <string>\n\nstd::vector<std::string> v{\"a\", \"b\"};",
  "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC LIMIT 10;",
  "{\"key\": \"value\", \"n\": 42, \"arr\": [1, 2, 3], \"nested\": {\"t\": true, \"f\": null}}",
  "<html><body><div class=\"x\">Hi &amp; bye</div></body></html>",
  "if x == y and not z:\n\tpass\nelif x != y:\n\treturn None\n",
  "fn main() -> Result<(), Box<dyn Error>> { let v: Vec<u8> = vec![0; 16]; Ok(()) }",
  "a = b ** 2 // 3 % 4; c <<= 1; d >>= 2; e &&= f; g ||= h; i ??= j;",
  "    indented by four\n        by eight\n\t\ttabs\n",
  "x=1;y=2;z=x+y", "$ ls -la | grep \"foo\" > out.txt 2>&1 && echo done",
  "// comment\n/* block\n   comment */\n# hash comment\n-- sql comment",
  "regex: ^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+)$", "path/to/file.txt C:\\Windows\\System32\\drivers\\etc\\hosts",
  "0x1F 0b1010 0o777 1e-10 3.14159 -2.5E+3 1_000_000", "λx. x + 1", "∀x∈ℝ: x² ≥ 0 ∑ ∏ ∫ √ ∞ ≠ ≤ ≥",
  "```python\nprint('hi')\n```", "- item 1\n- item 2\n  - nested\n1. first\n2. second",
  "| a | b |\n|---|---|\n| 1 | 2 |", "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
];
const numbers = [
  "0", "1", "12", "123", "1234", "12345", "123456789012345678901234567890", "3.14159265358979",
  "1,234,567.89", "1.234.567,89", "-42", "+7", "1e10", "2^32 = 4294967296", "10:30 AM", "2024-01-15T08:30:00Z",
  "Version 3.5.1-rc2", "Call 555-123-4567", "92000", "I was born in 92000, and this is falsé.", "½ ¾ ⅓ ² ³ ¹",
  "Ⅰ Ⅱ Ⅲ Ⅳ Ⅻ", "①②③ ⑴⑵ ⒈⒉", "٣٤٥", "१२३", "๑๒๓", "１２３４５", "𝟏𝟐𝟑 𝟘𝟙𝟚", "$100.00 €50 £20 ¥1000",
  "50% 3/4 1:2 #1 No.5", "a1b2c3d4", "x86_64 i386 arm64", "H2O CO2 C6H12O6",
];
const whitespace = [
  " ", "  ", "   ", "    ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", "\r", "\r\r\n",
  " \n", "  \n", " \n ", "\n \n", "\t\n", "\n\t", " \t \t ", "a  b", "a   b", "a\tb", "a\t\tb", "a\nb",
  "a\n\nb", "a\r\nb", "a \r\n b", "a\n  b", "a  \nb", "a \n\n  b", "Hi  Hello", "Hi   Hello", "\n\n \n  \n Hello",
  "   leading", "trailing   ", "   both   ", "\tleading tab", "trailing tab\t", "mixed \t \r\n \n\t end",
  "a\u00a0b", "a\u00a0\u00a0b", "a\u3000b", "a\u2003\u2003b", "a\u2028b", "a\u2029b", "a\u0085b", "a\u0085 b",
  "  \u0085x", "x\u000bx", "x\u000cx", "\u000b\u000c", "a\ufeffb", "\ufeff\ufeff x", "a\u180eb", "a\u200bb",
  "a\u200d\u200cb", "x\u00ad y", "line1\nline2\nline3\n", "para1\n\npara2\n\n\npara3", "end with spaces   \n",
  "          ten spaces", " ".repeat(64), "\n".repeat(20), " \n".repeat(10), "\t ".repeat(16), "\r\n".repeat(8),
  "word " + " ".repeat(40) + "word", "x" + "\t".repeat(30) + "y",
];
const specials = [
  "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
  "<think>\nreasoning\n</think>\n\nanswer", "<tool_call>{}</tool_call>", "<tool_response>ok</tool_response>",
  "<|vision_start|><|image_pad|><|vision_end|>", "<|vision_start|><|video_pad|><|vision_end|>",
  "<|object_ref_start|>cat<|object_ref_end|><|box_start|>(1,2),(3,4)<|box_end|>",
  "<|quad_start|>q<|quad_end|><|vision_pad|>", "<|fim_prefix|>def f(<|fim_suffix|>)<|fim_middle|>",
  "<|fim_pad|><|repo_name|>qinfer<|file_sep|>main.cc", "<|im_start|><|im_start|><|im_end|><|im_end|>",
  "text<|im_end|>text", " <|im_end|> ", "<|im_end|>\n", "\n<|im_start|>", "<|im_end", "im_end|>", "<|im_",
  "<|IM_END|>", "< |im_end|>", "<|im_end|>>", "<<|im_end|>", "<think>", "</think>", "<think></think>",
  "<thinking>", "</think >", "<|unknown_token|>", "<|endoftext|><|endoftext|>", "<s>", "hi<s>there", "</s>",
  "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\n你好<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
];
const marks = [
  "e\u0301", "cafe\u0301", "Cafe\u0301 na\u0308ive", "A\u030a", "o\u0308\u0304", "n\u0303", "a\u0300\u0301\u0302\u0303\u0304",
  "\u0301", "\u0301\u0301\u0301", " \u0301", "1\u0301", "!\u0301", "x\u0336y\u0336z\u0336", "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u036b\u0357\u0334\u0362\u0335\u031c\u0330\u0354L\u0368\u0367\u0369\u0358\u0320G\u0311\u0357\u030e\u0305\u035b\u0341\u0334\u033b\u0348\u034d\u0354\u0339O\u0342\u030c\u030c\u0358\u0328\u0335\u0339\u033b\u031d\u0333",
  "\u1100\u1161\u11a8", "\u1100\u1161 \u1102\u1161", "\u0915\u094d\u0937", "\u0e01\u0e34\u0e4a", "\u05e9\u05c1\u05b8",
  "\u212b", "\u2126", "\u00c5 vs A\u030a vs \u212b", "\ufb01 ligature", "\u1e9b\u0323", "\u0041\u0328\u0301",
  "q\u0307\u0323", "\u1e0b\u0323", "\u0044\u0307\u0323", "e\u0301".repeat(50), "a\u0300".repeat(100),
  "\u0939\u093f\u0928\u094d\u0926\u0940", "\u0628\u0650\u0633\u0652\u0645\u0650", "\u00e9t\u00e9 vs e\u0301te\u0301",
  "\u30ab\u3099", "\u304b\u3099\u304d\u3099", "\uac00\u11a8", "\u0f40\u0f7a", "\u0364\u0365",
];
for (const list of [english, cjk, rtlIndic, emoji, code, numbers, whitespace, specials, marks]) {
  for (const s of list) add(s);
}

// ---- wikitext-2 lines ---------------------------------------------------------------------
const wiki = fs.readFileSync(path.join(repo, "tests/data/wikitext-2/wiki.test.raw"), "utf8").split("\n");
for (let i = 0; i < wiki.length && cases.length < 1500; i += 3) add(wiki[i] + "\n");
for (let i = 0; i < 60; ++i) {  // multi-line chunks, including the " \n" blank lines
  const start = randInt(0, wiki.length - 8);
  add(wiki.slice(start, start + randInt(2, 6)).join("\n"));
}

// ---- Seeded random mixtures ---------------------------------------------------------------
const fragments = [].concat(english.slice(0, 30), cjk.slice(0, 12), rtlIndic.slice(0, 20), emoji.slice(0, 15),
                            numbers.slice(0, 20), marks.slice(0, 20));
const seps = [" ", "  ", "\t", "\n", "\r\n", "\n\n", " \n", "", "", "", ".", ", ", "'s ", "'LL ", "—", "…", "\u00a0"];
const specialToks = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>",
                     "</tool_call>", "<|image_pad|>", "<|vision_start|>", "<|fim_middle|>"];
for (let n = 0; n < 350; ++n) {
  let s = "";
  const parts = randInt(1, 6);
  for (let k = 0; k < parts; ++k) {
    const r = rand();
    if (r < 0.12) s += pick(specialToks);
    else if (r < 0.25) s += String(randInt(0, 100000));
    else s += pick(fragments);
    s += pick(seps);
  }
  add(s);
}
// Random code points from long-assigned blocks (Unicode <= 6.0, so every engine agrees on
// their categories), including combining marks and whitespace.
const ranges = [[0x20, 0x7e], [0xa0, 0x24f], [0x300, 0x36f], [0x370, 0x3ff], [0x400, 0x4ff], [0x590, 0x5ff],
                [0x600, 0x6ff], [0x900, 0x97f], [0xe00, 0xe5b], [0x1100, 0x11ff], [0x2000, 0x206f],
                [0x2190, 0x22ff], [0x3040, 0x30ff], [0x4e00, 0x9fa5], [0xac00, 0xd7a3], [0xff00, 0xffef],
                [0x1f300, 0x1f5ff], [0x1f600, 0x1f64f]];
const ws = [" ", " ", " ", "\n", "\t", "\r\n", "  "];
function assigned(cp) {  // skip unassigned / surrogate / private-use by a JS property check
  const c = String.fromCodePoint(cp);
  return !/\p{Cn}|\p{Cs}|\p{Co}/u.test(c);
}
for (let n = 0; n < 250; ++n) {
  let s = "";
  const len = randInt(1, 40);
  const [lo, hi] = pick(ranges);
  while ([...s].length < len) {
    if (rand() < 0.15) { s += pick(ws); continue; }
    const [a, b] = rand() < 0.8 ? [lo, hi] : pick(ranges);
    const cp = randInt(a, b);
    if (assigned(cp)) s += String.fromCodePoint(cp);
  }
  add(s);
}
// Random ASCII soup: punctuation, digits, letters, quotes, whitespace runs.
const ascii = "abcXYZ019'\"!?.,;:-_=+*/\\()[]{}<>|@#$%^&~` \t\n\r";
for (let n = 0; n < 150; ++n) {
  let s = "";
  const len = randInt(1, 60);
  for (let k = 0; k < len; ++k) s += ascii[randInt(0, ascii.length - 1)];
  add(s);
}

// ---- Encode and write -----------------------------------------------------------------------
async function encodeAll(texts) {
  const ids = [];
  for (let i = 0; i < texts.length; i += 512) {
    const batch = await tokenizer.encodeBatch(texts.slice(i, i + 512), { addSpecialTokens: false });
    for (const e of batch) ids.push(e.getIds());
  }
  return ids;
}
function writeCases(file, header, out) {
  const lines = out.map((c) => "  " + JSON.stringify(c));
  const json = JSON.stringify({ ...header, count: out.length }, null, 1).replace(/\n}$/, ",\n \"cases\": [\n") +
               lines.join(",\n") + "\n ]\n}\n";
  const dest = path.join(repo, "tests/data/tokenizer", file);
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  fs.writeFileSync(dest, json);
  console.log(`wrote ${out.length} cases to ${dest} (${json.length} bytes)`);
}
const provenance = {
  tokenizer_json_sha256: crypto.createHash("sha256").update(tokBytes).digest("hex"),
  ids_generated_with: `tokenizers@${rustVersion} (npm, Rust binding) Tokenizer.fromFile(tokenizer.json) + ` +
                      "tokenizer_config.json added_tokens_decoder, encode(text, {addSpecialTokens:false}) on " +
                      "assets/tokenizer/qwen3.5; tools/tokenizer_golden/gen_golden.mjs",
};
{
  const ids = await encodeAll(cases);
  const out = cases.map((text, i) => {
    const c = { text, ids: ids[i] };
    const nfc = normalizer.normalizeString(text);
    if (nfc !== text) c.nfc = nfc;
    return c;
  });
  writeCases("golden_corpus.json", { ...provenance, nfc_generated_with: `the same tokenizer's normalizer (NFC)` }, out);
}

// ---- Unicode probe: every combining mark and canonical decomposition, in context ----------------
// HF's NFC (crate unicode-normalization-alignments) uses Unicode 9.0 data; the probe covers the
// marks and compositions of every later version too, so a tokenizer on newer data shows up here.
{
  const probe = [];
  const seenProbe = new Set();
  const addP = (s) => { if (!seenProbe.has(s)) { seenProbe.add(s); probe.push(s); } };
  const isMark = /^\p{M}$/u, unassigned = /^[\p{Cn}\p{Cs}\p{Co}]$/u;
  for (let cp = 0x300; cp <= 0x10ffff; ++cp) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const c = String.fromCodePoint(cp);
    if (unassigned.test(c)) continue;
    const nfd = c.normalize("NFD");
    if (isMark.test(c)) {
      // alone after a base, before/after marks of class 220 and 230 (reordering), doubled, and
      // after a base it might compose with (composition).
      addP("a" + c); addP("a" + c + "\u0316"); addP("a\u0301" + c); addP("e" + c + "\u0301");
      addP(" " + c + "x"); addP(c + c);
    } else if (nfd !== c && !(cp >= 0xac00 && cp <= 0xd7a3)) {
      // a canonical composite: its decomposition (composes back), and with a mark in between
      addP(nfd); addP(c); addP(nfd + "\u0316");
      const parts = [...nfd];
      if (parts.length >= 2) addP(parts[0] + "\u0316" + parts.slice(1).join(""));
    }
  }
  for (let cp = 0xac00; cp <= 0xd7a3; cp += 97) addP(String.fromCodePoint(cp).normalize("NFD"));
  const ids = await encodeAll(probe);
  writeCases("unicode_probe.json", { ...provenance, unicode_of_node: process.versions.unicode },
             probe.map((text, i) => ({ text, ids: ids[i] })));
}
