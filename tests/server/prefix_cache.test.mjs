// The prefix cache through the openai client: the same requests to a server without a cache and
// to one with it give the same text and logprobs, greedy or seeded, alone, in a growing chat and
// concurrently; usage reports cached_tokens (streamed too) and /metrics the hits and evictions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, franceMessages } from './harness.mjs';

const args = ['--ctx', '512', '--max-seqs', '4', '--chunk', '16'];
const cold = await startServer([...args, '--cache-mb', '0']);
const warm = await startServer(args);  // the default budget
const clients = { cold: cold.client(), warm: warm.client() };

const greedy = { temperature: 0, ignore_eos: true, logprobs: true, top_logprobs: 2 };
const seeded = { temperature: 0.9, top_k: 40, top_p: 0.95, presence_penalty: 0.5, frequency_penalty: 0.3,
                 repetition_penalty: 1.2, seed: 11, ignore_eos: true, logprobs: true };
const system = { role: 'system', content: 'You are a terse assistant. '.repeat(12) };

async function chat(which, messages, sampling, extra = {}) {
  return clients[which].chat.completions.create({ model: 'qwen3-tiny', messages, max_tokens: 12, ...sampling, ...extra });
}

// Everything a reply says, logprobs to the bit (JSON numbers print every digit of a float).
function answer(r) {
  const m = r.choices[0].message;
  return JSON.stringify([m.content, m.reasoning_content, r.choices[0].logprobs, r.choices[0].finish_reason]);
}

async function metrics(server) {
  const text = await (await fetch(server.url + '/metrics')).text();
  const value = (name) => Number(text.match(new RegExp(`^${name} (\\S+)`, 'm'))[1]);
  return Object.fromEntries(['hits_total', 'misses_total', 'cached_tokens_total', 'evictions_total', 'entries', 'bytes',
                             'budget_bytes'].map((n) => [n, value('qwen3_prefix_cache_' + n)]));
}

test('the identical request twice: the second reuses all but the last prompt token, same bits', async () => {
  for (const sampling of [greedy, seeded]) {
    const messages = [system, ...franceMessages];
    const reference = await chat('cold', messages, sampling);
    const first = await chat('warm', messages, sampling);
    const second = await chat('warm', messages, sampling);
    assert.equal(answer(first), answer(reference));
    assert.equal(answer(second), answer(reference));
    assert.equal(reference.usage.prompt_tokens_details.cached_tokens, 0);
    assert.equal(second.usage.prompt_tokens_details.cached_tokens, second.usage.prompt_tokens - 1);
  }
});

test('a growing 4-turn chat: each turn reuses the last, replies equal the cold server', async () => {
  for (const sampling of [greedy, seeded]) {
    const messages = [system];
    for (let turn = 0; turn < 4; ++turn) {
      messages.push({ role: 'user', content: `Question ${turn}: what comes after ${turn * 7}?` });
      const reference = await chat('cold', messages, sampling);
      const r = await chat('warm', messages, sampling);
      assert.equal(answer(r), answer(reference), `turn ${turn}`);
      const cached = r.usage.prompt_tokens_details.cached_tokens;
      // From the second turn on, at least the previous turn's prompt is reused.
      if (turn > 0) assert.ok(cached > messages.length * 10, `turn ${turn}: ${JSON.stringify(r.usage)}`);
      assert.ok(cached < r.usage.prompt_tokens);
      messages.push({ role: 'assistant', content: r.choices[0].message.content });
    }
  }
});

test('streamed usage carries cached_tokens; streamed text equals the cold reply', async () => {
  const messages = [system, { role: 'user', content: 'Stream this, please.' }];
  const reference = await chat('cold', messages, greedy);
  for (let i = 0; i < 2; ++i) {
    const stream = await chat('warm', messages, greedy, { stream: true, stream_options: { include_usage: true } });
    let content = '', reasoning = '', usage = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        content += c.delta.content ?? '';
        reasoning += c.delta.reasoning_content ?? '';
      }
    }
    assert.equal(content, reference.choices[0].message.content ?? '');
    assert.equal(reasoning, reference.choices[0].message.reasoning_content ?? '');
    assert.equal(usage.prompt_tokens, reference.usage.prompt_tokens);
    if (i === 1) assert.equal(usage.prompt_tokens_details.cached_tokens, usage.prompt_tokens - 1);
  }
});

test('concurrent requests never share a sequence: each still equals its cold reply', async () => {
  const prompts = [0, 1, 2, 3].map((i) => [system, { role: 'user', content: `Parallel ${i % 2}` }]);
  const reference = await Promise.all(prompts.map((m) => chat('cold', m, greedy)));
  for (let round = 0; round < 2; ++round) {
    const replies = await Promise.all(prompts.map((m) => chat('warm', m, greedy)));
    replies.forEach((r, i) => assert.equal(answer(r), answer(reference[i]), `round ${round}, request ${i}`));
  }
});

test('completions (token ids) reuse the cache too', async () => {
  const prompt = Array.from({ length: 40 }, (_, i) => 100 + i);
  const body = { model: 'qwen3-tiny', prompt, max_tokens: 8, temperature: 0, ignore_eos: true, logprobs: 2 };
  const reference = await clients.cold.completions.create(body);
  await clients.warm.completions.create(body);
  const r = await clients.warm.completions.create(body);
  assert.deepEqual(r.choices, reference.choices);
  assert.equal(r.usage.prompt_tokens_details.cached_tokens, 39);
});

test('metrics: hits, cached tokens, entries and bytes; none with --cache-mb 0', async () => {
  const on = await metrics(warm), off = await metrics(cold);
  assert.ok(on.hits_total >= 10, JSON.stringify(on));
  assert.ok(on.cached_tokens_total > 500, JSON.stringify(on));
  assert.ok(on.misses_total >= 1 && on.entries >= 1 && on.bytes > 0, JSON.stringify(on));
  assert.ok(on.bytes <= on.budget_bytes && on.budget_bytes > 0, JSON.stringify(on));
  assert.deepEqual(off, { hits_total: 0, misses_total: 0, cached_tokens_total: 0, evictions_total: 0, entries: 0, bytes: 0,
                          budget_bytes: 0 });
});

test('a 1 MiB cache evicts the least recently used and stays within its budget', async () => {
  const small = await startServer([...args, '--cache-mb', '1']);
  const client = small.client();
  const prompt = (i) => Array.from({ length: 300 }, (_, k) => 1000 * (i + 1) + k);  // 512-token sequences
  for (let i = 0; i < 6; ++i)
    await client.completions.create({ model: 'q', prompt: prompt(i), max_tokens: 2, temperature: 0 });
  const m = await metrics(small);
  assert.ok(m.evictions_total >= 3, JSON.stringify(m));
  assert.ok(m.bytes <= 1 << 20 && m.entries >= 1, JSON.stringify(m));
  const newest = await client.completions.create({ model: 'q', prompt: prompt(5), max_tokens: 2, temperature: 0 });
  assert.equal(newest.usage.prompt_tokens_details.cached_tokens, 299);
  const oldest = await client.completions.create({ model: 'q', prompt: prompt(0), max_tokens: 2, temperature: 0 });
  assert.equal(oldest.usage.prompt_tokens_details.cached_tokens, 0);
});
