// Prefix-cache benchmark for `qwen3 serve` (not a test): time to first token with the cache off
// and on, for the identical long chat request sent twice and for a chat that grows over 4 turns.
// Starts its own servers on free ports, one after the other (--cache-mb 0, then the default).
//   node tools/server/prefix_bench.mjs --model DIR [--binary build/qwen3] [--threads 0]
//        [--rounds 3] [--prompt-tokens 1700] [--system-tokens 600] [--turn-tokens 300]
// Each figure is the median of --rounds rounds; every round starts from a prompt no earlier round
// shares, so its first request is cold on both servers.
import { parseArgs } from 'node:util';

import { startServer, streamRequest } from './bench_client.mjs';

const { values: opt } = parseArgs({ options: {
  model: { type: 'string' }, binary: { type: 'string', default: 'build/qwen3' },
  threads: { type: 'string', default: '0' }, rounds: { type: 'string', default: '3' },
  'prompt-tokens': { type: 'string', default: '1700' }, 'system-tokens': { type: 'string', default: '600' },
  'turn-tokens': { type: 'string', default: '300' },
} });
if (!opt.model) { console.error('usage: prefix_bench.mjs --model DIR [options]'); process.exit(2); }
const rounds = Number(opt.rounds);

// Words that are one token each after a space in Qwen's vocabulary, drawn by a fixed generator: a
// text of n words is about n tokens.
const words = ('the of and to in is was for on that with as by at from his her are be this which have or one had not ' +
               'but what all were when we there can an your more if has will their so about out up them some time ' +
               'would other into could these two may first then do any like my now over such our man me even most ' +
               'made after also did many before must through back years where much way well down should because ' +
               'each just those people how too little state good very make world still own see men work long get ' +
               'here between both life being under never day same another know while last might us great old year')
  .split(' ');
function text(n, seed) {
  let x = seed * 2654435761 % 4294967296 || 1, out = [];
  for (let i = 0; i < n; ++i) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out.push(words[x % words.length]);
  }
  return out.join(' ');
}

// One streamed chat request. TTFT is the first chunk carrying a token (logprobs make every token
// a chunk; the role chunk comes before any work). Returns it with the usage and the reply.
async function chat(url, messages) {
  let ttft = null, usage = null, content = '';
  await streamRequest(url, '/v1/chat/completions', { messages, max_tokens: 16, temperature: 0, ignore_eos: true, logprobs: true,
                                                      enable_thinking: false, stream_options: { include_usage: true } },
                      (chunk, seconds) => {
    const choice = chunk.choices?.[0];
    if (ttft === null && choice?.logprobs) ttft = seconds;
    content += choice?.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  });
  return { ttft, prompt: usage.prompt_tokens, cached: usage.prompt_tokens_details?.cached_tokens ?? 0, content };
}

// The identical request twice (the second a hit when the cache is on), and a 4-turn chat.
async function scenarios(url, round) {
  const tag = `Session ${round}-${Math.random().toString(36).slice(2)}.`;  // no round shares a prefix
  const long = [{ role: 'system', content: tag + ' You are a helpful assistant.' },
                { role: 'user', content: text(Number(opt['prompt-tokens']) - 30, round + 1) }];
  const repeat = [await chat(url, long), await chat(url, long)];
  const messages = [{ role: 'system', content: tag + ' ' + text(Number(opt['system-tokens']), round + 100) }];
  const turns = [];
  for (let t = 0; t < 4; ++t) {
    messages.push({ role: 'user', content: text(Number(opt['turn-tokens']), round * 10 + t + 200) });
    const r = await chat(url, messages);
    messages.push({ role: 'assistant', content: r.content });
    turns.push(r);
  }
  return { repeat, turns };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = {};
for (const [name, cacheArgs] of [['off', ['--cache-mb', '0']], ['on', []]]) {
  const server = await startServer(opt.binary, opt.model, ['--max-seqs', '1', '--ctx', '4096', '--threads', opt.threads,
                                                           ...cacheArgs]);
  await chat(server.url, [{ role: 'user', content: 'warm-up' }]);  // pages the weights in
  results[name] = [];
  for (let r = 0; r < rounds; ++r) {
    results[name].push(await scenarios(server.url, r));
    const x = results[name].at(-1), f = (rs) => rs.map((q) => q.ttft.toFixed(3)).join(' ');
    console.error(`cache ${name}, round ${r + 1}: repeat ${f(x.repeat)} | chat ${f(x.turns)}`);
  }
  await server.stop();
}

const s = (x) => x.toFixed(3).padStart(7);
console.log(`model ${opt.model}, threads ${opt.threads}, median of ${rounds} rounds, TTFT in seconds`);
console.log('\nidentical request twice   prompt  cached  TTFT off  TTFT on  on/off');
for (const [i, label] of ['first (cold)', 'second'].entries()) {
  const off = median(results.off.map((x) => x.repeat[i].ttft)), on = median(results.on.map((x) => x.repeat[i].ttft));
  const last = results.on.at(-1).repeat[i];
  console.log(`  ${label.padEnd(22)} ${String(last.prompt).padStart(6)}  ${String(last.cached).padStart(6)}  ${s(off)}  ` +
              `${s(on)}  ${(100 * on / off).toFixed(1).padStart(5)}%`);
}
const coldOn = median(results.on.map((x) => x.repeat[0].ttft)), hitOn = median(results.on.map((x) => x.repeat[1].ttft));
console.log(`  hit / cold on the cached server: ${(100 * hitOn / coldOn).toFixed(1)}%`);
console.log('\n4-turn chat   prompt  cached  new  TTFT off  TTFT on  on/off  ms per new token (on)');
for (let t = 0; t < 4; ++t) {
  const off = median(results.off.map((x) => x.turns[t].ttft)), on = median(results.on.map((x) => x.turns[t].ttft));
  const last = results.on.at(-1).turns[t], fresh = last.prompt - last.cached;
  console.log(`  turn ${t + 1}    ${String(last.prompt).padStart(6)}  ${String(last.cached).padStart(6)}  ${String(fresh).padStart(4)}  ` +
              `${s(off)}  ${s(on)}  ${(100 * on / off).toFixed(1).padStart(5)}%  ${(1000 * on / fresh).toFixed(2).padStart(6)}`);
}
process.exit(0);
