// Continuous batching seen from clients: 64 concurrent streams each equal their solo greedy
// result, aborted clients don't disturb the rest and free their slots at once, memory stays
// bounded, and requests over the queue limit get 429s with Retry-After.
import { test } from 'node:test';
import fs from 'node:fs';
import assert from 'node:assert/strict';
import { startServer, idsOfCompletion } from './harness.mjs';

// 64 streams on 32 slots: half are batched at once, half wait in the queue for a slot.
const server = await startServer(['--ctx', '512', '--max-seqs', '32', '--max-queue', '64', '--chunk', '8', '--cache-mb', '4']);
const client = server.client();
// Prompts of different lengths, so prefill chunks and decode steps mix in the same batch.
const prompts = Array.from({ length: 64 }, (_, i) => Array.from({ length: 3 + 5 * i }, (_, j) => 100 + ((i * 31 + j * 7) % 5000)));
const body = (prompt) => ({ model: 'qwen3-tiny', prompt, max_tokens: 12, temperature: 0, ignore_eos: true, logprobs: 0,
                            return_tokens_as_token_ids: true });

async function streamIds(prompt, signal) {
  const ids = [];
  const stream = await client.completions.create({ ...body(prompt), stream: true }, { signal });
  for await (const chunk of stream)
    if (chunk.choices[0]?.logprobs) ids.push(...idsOfCompletion(chunk.choices[0]));
  return ids;
}

// The server's resident memory (Linux), in bytes.
const rss = (proc) => Number(fs.readFileSync(`/proc/${proc.pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m)[1]) * 1024;

test('64 concurrent streams equal their solo results; aborted clients free their slots', async () => {
  const generatedSoFar = async () =>
    Number((await (await fetch(server.url + '/metrics')).text()).match(/^qwen3_generation_tokens_total (\d+)/m)[1]);
  const solo = [];
  for (const p of prompts) solo.push(idsOfCompletion((await client.completions.create(body(p))).choices[0]));

  // Clients that hang up after their first chunk, alongside the 16.
  const aborted = Array.from({ length: 4 }, async (_, i) => {
    const controller = new AbortController();
    const stream = await client.completions.create({ ...body(prompts[i]), max_tokens: 400, stream: true },
                                                   { signal: controller.signal });
    try { for await (const _ of stream) { controller.abort(); } } catch { /* the abort itself */ }
  });
  const before = await generatedSoFar();
  const results = await Promise.all(prompts.map((p) => streamIds(p)));
  await Promise.all(aborted);
  results.forEach((ids, i) => assert.deepEqual(ids, solo[i], `stream ${i}`));

  let active = -1;
  for (let tries = 0; tries < 100 && active !== 0; ++tries) {
    const metrics = await (await fetch(server.url + '/metrics')).text();
    active = Number(metrics.match(/^qwen3_active_sequences (\d+)/m)[1]);
    if (active) await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(active, 0);
  // The aborted requests were cancelled early: far fewer than their 4 x 400 tokens were generated.
  const generated = (await generatedSoFar()) - before;
  assert.ok(generated < prompts.length * 12 + 4 * 100, `generated ${generated} tokens`);
});

test('memory stays bounded: more rounds of 64 streams take no more memory', async () => {
  const round = () => Promise.all(prompts.map((p) => streamIds(p)));
  await round();
  const settled = rss(server.proc);
  for (let i = 0; i < 3; ++i) await round();
  // Sequences are reused up to --max-seqs, the prefix cache stays within --cache-mb: a leak of
  // a request's prompt, KV cache or connection buffers would grow by 192 requests' worth.
  const grown = rss(server.proc) - settled;
  console.log(`RSS after one round ${(settled / 1048576).toFixed(1)} MiB, ${(grown / 1048576).toFixed(1)} MiB more after three more`);
  // Under AddressSanitizer (.ci/run sets ASAN_OPTIONS) freed memory waits in a quarantine of up to
  // 256 MiB before it is reused, so RSS grows until that fills; LeakSanitizer checks for leaks there.
  const quarantine = process.env.ASAN_OPTIONS !== undefined ? 256 << 20 : 0;
  assert.ok(grown < (8 << 20) + quarantine, `RSS grew by ${(grown / 1048576).toFixed(1)} MiB over 192 requests (from ${(settled / 1048576).toFixed(1)} MiB)`);
});

test('a client that disconnects mid-stream frees its slot at once', async () => {
  const single = await startServer(['--ctx', '32768', '--max-seqs', '1']);
  const metric = async (name) =>
    Number((await (await fetch(single.url + '/metrics')).text()).match(new RegExp(`^${name} (\\d+)`, 'm'))[1]);
  const long = { prompt: [1, 2, 3], max_tokens: 30000, ignore_eos: true, temperature: 0 };
  const controller = new AbortController();
  const stream = await single.client().completions.create({ ...long, stream: true }, { signal: controller.signal });
  let chunks = 0;
  try { for await (const _ of stream) if (++chunks === 3) controller.abort(); } catch { /* the abort */ }
  // The one slot was taken; the next request runs as soon as the server notices the hang-up.
  const started = Date.now();
  const next = await single.client().completions.create({ prompt: [4, 5, 6], max_tokens: 5, ignore_eos: true });
  const waited = Date.now() - started;
  assert.equal(next.usage.completion_tokens, 5);
  const generated = await metric('qwen3_generation_tokens_total');
  assert.ok(generated < 1000, `the aborted stream ran on to ${generated - 5} tokens`);
  console.log(`aborted after ${generated - 5} tokens; the next request answered in ${waited} ms`);
  assert.ok(waited < 5000, `the next request waited ${waited} ms`);
});

test('requests over --max-seqs + --max-queue get 429s while the slots are held; then the queue drains', async () => {
  const burst = await startServer(['--ctx', '32768', '--max-seqs', '1', '--max-queue', '2']);
  const metric = async (name) =>
    Number((await (await fetch(burst.url + '/metrics')).text()).match(new RegExp(`^${name} (\\d+)`, 'm'))[1]);
  const waitFor = async (active, queued) => {
    for (let tries = 0; tries < 200; ++tries) {
      if ((await metric('qwen3_active_sequences')) === active && (await metric('qwen3_queue_length')) === queued) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.fail(`never reached ${active} active and ${queued} queued`);
  };
  const post = (body, signal) => fetch(burst.url + '/v1/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body), signal,
  });
  // Three long generations take the one slot, then the two queue places (one at a time: the
  // queue limit counts requests not yet admitted), so what follows does not depend on how fast
  // the machine is; they are cancelled at the end.
  const holder = new AbortController();
  const hold = () =>
    post({ prompt: [1, 2, 3], max_tokens: 30000, ignore_eos: true, stream: true }, holder.signal).catch(() => {});
  const held = [hold()];
  await waitFor(1, 0);
  held.push(hold(), hold());
  await waitFor(1, 2);
  const refused = await Promise.all(Array.from({ length: 9 }, async () => {
    const res = await post({ prompt: [1, 2, 3], max_tokens: 5 });
    const json = await res.json();
    if (res.status === 429) {
      assert.equal(json.error.type, 'rate_limit_error');
      assert.ok(Number(res.headers.get('retry-after')) > 0, `Retry-After: ${res.headers.get('retry-after')}`);
    }
    return res.status;
  }));
  assert.deepEqual(refused, Array(9).fill(429));
  holder.abort();
  await Promise.all(held);
  await waitFor(0, 0);
  const res = await post({ prompt: [1, 2, 3], max_tokens: 5, ignore_eos: true });
  assert.equal(res.status, 200);
  assert.equal((await res.json()).usage.completion_tokens, 5);
});
