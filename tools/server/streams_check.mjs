// Concurrency check for `qwen3 serve` (not a test, not a benchmark): N concurrent greedy streams,
// each compared with the answer its request gets alone, for models too large for the test suite.
// Starts its own server on a free port; prints how many were answered and equal, and peak RSS.
//   node tools/server/streams_check.mjs --model DIR [--binary build/qwen3] [--streams 64]
//        [--max-tokens 8] [--threads 0]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({ options: {
  model: { type: 'string' }, binary: { type: 'string', default: 'build/qwen3' },
  streams: { type: 'string', default: '64' }, 'max-tokens': { type: 'string', default: '8' },
  threads: { type: 'string', default: '0' },
} });
if (!opt.model) { console.error('usage: streams_check.mjs --model DIR [options]'); process.exit(2); }
const streams = Number(opt.streams);

const server = spawn(opt.binary, ['serve', opt.model, '--port', '0', '--threads', opt.threads, '--ctx', '256',
                                  '--max-seqs', String(streams), '--max-queue', String(streams), '--cache-mb', '0'],
                     { stdio: ['ignore', 'pipe', 'inherit'] });
process.on('exit', () => server.kill('SIGKILL'));
const url = await new Promise((resolve, reject) => {
  let out = '';
  server.stdout.on('data', (d) => { out += d; const m = out.match(/listening on (\S+)/); if (m) resolve(m[1]); });
  server.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
});

// Prompts of 4 to 32 token ids, so prefill chunks and decode steps mix in the batch.
const prompts = Array.from({ length: streams }, (_, i) =>
  Array.from({ length: 4 + (i % 8) * 4 }, (_, j) => 100 + ((i * 31 + j * 7) % 5000)));
const request = (prompt, stream) => fetch(url + '/v1/completions', {
  method: 'POST', headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify({ prompt, max_tokens: Number(opt['max-tokens']), temperature: 0, ignore_eos: true,
                         logprobs: 0, return_tokens_as_token_ids: true, stream }) });
const ids = (tokens) => tokens.map((t) => Number(t.slice('token_id:'.length)));

async function alone(prompt) {
  return ids((await (await request(prompt, false)).json()).choices[0].logprobs.tokens);
}
async function streamed(prompt) {
  const res = await request(prompt, true);
  if (res.status !== 200) return null;
  const out = [];
  for (const line of (await res.text()).split('\n'))
    if (line.startsWith('data: {')) {
      const choice = JSON.parse(line.slice(6)).choices[0];
      if (choice?.logprobs) out.push(...ids(choice.logprobs.tokens));
    }
  return out;
}

const solo = [];
for (const p of prompts) solo.push(await alone(p));
const together = await Promise.all(prompts.map(streamed));
const answered = together.filter((r) => r !== null).length;
const equal = together.filter((r, i) => JSON.stringify(r) === JSON.stringify(solo[i])).length;
const peak = fs.readFileSync(`/proc/${server.pid}/status`, 'utf8').match(/^VmHWM:\s+(\d+) kB/m)[1];
console.log(`${streams} streams: ${answered} answered, ${equal} equal to their solo answers; peak RSS ${(peak / 1048576).toFixed(2)} GiB`);
process.exit(answered === streams && equal === streams ? 0 : 1);
