// Continuous batching seen from clients: 16 concurrent streams each equal their solo greedy
// result, aborted clients don't disturb the rest, and a burst over the queue limit gets 429s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, idsOfCompletion } from './harness.mjs';

const server = await startServer(['--ctx', '512', '--max-seqs', '16', '--max-queue', '16', '--chunk', '8']);
const client = server.client();
// Prompts of different lengths, so prefill chunks and decode steps mix in the same batch.
const prompts = Array.from({ length: 16 }, (_, i) => Array.from({ length: 3 + 5 * i }, (_, j) => 100 + ((i * 31 + j * 7) % 5000)));
const body = (prompt) => ({ model: 'qwen3-tiny', prompt, max_tokens: 12, temperature: 0, ignore_eos: true, logprobs: 0,
                            return_tokens_as_token_ids: true });

async function streamIds(prompt, signal) {
  const ids = [];
  const stream = await client.completions.create({ ...body(prompt), stream: true }, { signal });
  for await (const chunk of stream)
    if (chunk.choices[0]?.logprobs) ids.push(...idsOfCompletion(chunk.choices[0]));
  return ids;
}

test('16 concurrent streams equal their solo results; aborted clients free their slots', async () => {
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
  for (let tries = 0; tries < 50 && active !== 0; ++tries) {
    const metrics = await (await fetch(server.url + '/metrics')).text();
    active = Number(metrics.match(/^qwen3_active_sequences (\d+)/m)[1]);
    if (active) await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(active, 0);
  // The aborted requests were cancelled early: far fewer than their 4 x 400 tokens were generated.
  const generated = (await generatedSoFar()) - before;
  assert.ok(generated < 16 * 12 + 4 * 100, `generated ${generated} tokens`);
});

test('a burst over --max-seqs + --max-queue gets 429s, the rest complete', async () => {
  const burst = await startServer(['--ctx', '512', '--max-seqs', '1', '--max-queue', '2']);
  const statuses = await Promise.all(Array.from({ length: 12 }, async () => {
    const res = await fetch(burst.url + '/v1/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: [1, 2, 3], max_tokens: 200, ignore_eos: true }),
    });
    const json = await res.json();
    if (res.status === 429) assert.equal(json.error.type, 'rate_limit_error');
    return res.status;
  }));
  const count = (s) => statuses.filter((x) => x === s).length;
  assert.ok(count(429) >= 1, JSON.stringify(statuses));
  assert.ok(count(200) >= 3, JSON.stringify(statuses));
  assert.equal(count(200) + count(429), 12, JSON.stringify(statuses));
});
