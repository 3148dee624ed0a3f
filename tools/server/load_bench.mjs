// Load benchmark for `qwen3 serve` (not a test): aggregate generated tokens/s and p50/p99 time to
// first token at several numbers of concurrent streams. Starts its own server on a free port.
//   node tools/server/load_bench.mjs --model DIR [--binary build/qwen3] [--max-tokens 64]
//        [--levels 1,4,16] [--rounds 1] [--prompt-tokens 32] [--threads 0]
import { parseArgs } from 'node:util';

import { startServer, streamRequest } from './bench_client.mjs';

const { values: opt } = parseArgs({ options: {
  model: { type: 'string' }, binary: { type: 'string', default: 'build/qwen3' },
  'max-tokens': { type: 'string', default: '64' }, levels: { type: 'string', default: '1,4,16' },
  rounds: { type: 'string', default: '1' }, 'prompt-tokens': { type: 'string', default: '32' },
  threads: { type: 'string', default: '0' },
} });
if (!opt.model) { console.error('usage: load_bench.mjs --model DIR [options]'); process.exit(2); }
const levels = opt.levels.split(',').map(Number);
const maxTokens = Number(opt['max-tokens']);

const { url } = await startServer(opt.binary, opt.model, ['--max-seqs', String(Math.max(...levels)), '--ctx', '1024',
                                                         '--threads', opt.threads]);

// One streamed completion; returns its time to first token and the tokens it generated.
async function one(seed) {
  const prompt = Array.from({ length: Number(opt['prompt-tokens']) }, (_, i) => 1000 + ((seed * 97 + i * 13) % 20000));
  let ttft = null, tokens = 0;
  await streamRequest(url, '/v1/completions', { prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true,
                                                 stream_options: { include_usage: true } }, (chunk, seconds) => {
    if (ttft === null && chunk.choices?.length) ttft = seconds;
    if (chunk.usage) tokens = chunk.usage.completion_tokens;
  });
  return { ttft, tokens };
}

const quantile = (xs, q) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(q * s.length))]; };
await one(0);  // warm-up: page the weights in
console.log(`model ${opt.model}, ${maxTokens} new tokens per request, ${opt['prompt-tokens']}-token prompts`);
console.log('streams  requests  tokens  seconds  tokens/s  ttft_p50_s  ttft_p99_s');
let single = null;
for (const streams of levels) {
  const start = performance.now();
  const results = (await Promise.all(Array.from({ length: streams }, async (_, s) => {
    const out = [];
    for (let r = 0; r < Number(opt.rounds); ++r) out.push(await one(streams * 1000 + s * 10 + r));
    return out;
  }))).flat();
  const seconds = (performance.now() - start) / 1000;
  const tokens = results.reduce((a, r) => a + r.tokens, 0);
  const rate = tokens / seconds;
  single ??= rate;
  const ttfts = results.map((r) => r.ttft);
  console.log(`${String(streams).padStart(7)}  ${String(results.length).padStart(8)}  ${String(tokens).padStart(6)}  ` +
              `${seconds.toFixed(1).padStart(7)}  ${rate.toFixed(1).padStart(8)}  ${quantile(ttfts, 0.5).toFixed(3).padStart(10)}  ` +
              `${quantile(ttfts, 0.99).toFixed(3).padStart(10)}   (x${(rate / single).toFixed(2)} over 1 stream)`);
}
process.exit(0);
