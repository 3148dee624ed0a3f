// qwen3 serve through the official openai client: chat and completions, streaming or not,
// usage, stop strings, thinking, and greedy output equal to the engine's own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, generateIds, idsOfChat, idsOfCompletion, franceMessages, franceIds } from './harness.mjs';

const server = await startServer(['--ctx', '256', '--max-seqs', '4']);
const client = server.client();
const greedy = { temperature: 0, ignore_eos: true, return_tokens_as_token_ids: true };
const prompt = [785, 6722, 315, 9625, 374];

test('completions: greedy ids equal qwen3 generate, usage counts', async () => {
  const r = await client.completions.create({ model: 'qwen3-tiny', prompt, max_tokens: 12, logprobs: 0, ...greedy });
  assert.equal(r.object, 'text_completion');
  assert.deepEqual(idsOfCompletion(r.choices[0]), generateIds(prompt, 12));
  assert.deepEqual(r.usage, { prompt_tokens: 5, completion_tokens: 12, total_tokens: 17, prompt_tokens_details: { cached_tokens: 0 } });
  assert.equal(r.choices[0].finish_reason, 'length');
});

test('chat: prompt ids are the template fixture, greedy ids equal qwen3 generate', async () => {
  const r = await client.chat.completions.create({ model: 'qwen3-tiny', messages: franceMessages, max_tokens: 10, logprobs: true, ...greedy });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(r.usage.prompt_tokens, franceIds.length);
  assert.equal(r.usage.completion_tokens, 10);
  assert.deepEqual(idsOfChat(r.choices[0]), generateIds(franceIds, 10));
});

test('chat streaming equals non-streaming, with include_usage', async () => {
  const body = { model: 'qwen3-tiny', messages: franceMessages, max_tokens: 16, temperature: 0, ignore_eos: true };
  const whole = await client.chat.completions.create(body);
  const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
  let content = '', reasoning = '', finish = null, usage = null, role = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      role ??= c.delta.role;
      content += c.delta.content ?? '';
      reasoning += c.delta.reasoning_content ?? '';
      finish = c.finish_reason ?? finish;
    }
  }
  assert.equal(role, 'assistant');
  assert.equal(content, whole.choices[0].message.content);
  assert.equal(reasoning, whole.choices[0].message.reasoning_content ?? '');
  assert.equal(finish, 'length');
  // The same prompt again: all of it but the last token comes from the prefix cache.
  assert.deepEqual(usage, { ...whole.usage, prompt_tokens_details: { cached_tokens: franceIds.length - 1 } });
});

test('completions streaming equals non-streaming', async () => {
  const body = { model: 'qwen3-tiny', prompt: 'The capital of France is', max_tokens: 16, temperature: 0, ignore_eos: true };
  const whole = await client.completions.create(body);
  let text = '', finish = null;
  for await (const chunk of await client.completions.create({ ...body, stream: true })) {
    text += chunk.choices[0]?.text ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(text, whole.choices[0].text);
  assert.equal(finish, 'length');
});

test('stop strings end the text before the first match, finish_reason stop', async () => {
  const body = { model: 'qwen3-tiny', prompt, max_tokens: 24, temperature: 0, ignore_eos: true };
  const full = (await client.completions.create(body)).choices[0].text;
  assert.ok(full.length > 8, `greedy text too short: ${JSON.stringify(full)}`);
  const stop = full.slice(4, 7);
  const expected = full.slice(0, full.indexOf(stop));
  for (const stream of [false, true]) {
    let text = '', finish = null;
    if (stream) {
      for await (const chunk of await client.completions.create({ ...body, stop: [stop, '\u0001never'], stream })) {
        text += chunk.choices[0]?.text ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
    } else {
      const r = await client.completions.create({ ...body, stop });
      text = r.choices[0].text;
      finish = r.choices[0].finish_reason;
    }
    assert.equal(text, expected, `stream=${stream}`);
    assert.equal(finish, 'stop');
  }
});

test('seeded sampling is reproducible; sampling parameters are accepted', async () => {
  const body = { model: 'qwen3-tiny', prompt, max_tokens: 12, temperature: 0.9, top_p: 0.9, top_k: 40, min_p: 0.01,
                 presence_penalty: 0.5, frequency_penalty: 0.2, repetition_penalty: 1.1, seed: 7, ignore_eos: true };
  const a = await client.completions.create(body);
  const b = await client.completions.create(body);
  assert.equal(a.choices[0].text, b.choices[0].text);
});

test('top_logprobs: alternatives in descending order, the chosen greedy token first', async () => {
  const r = await client.chat.completions.create({ model: 'qwen3-tiny', messages: franceMessages, max_tokens: 3,
                                                   logprobs: true, top_logprobs: 3, temperature: 0, ignore_eos: true });
  for (const t of r.choices[0].logprobs.content) {
    assert.equal(t.top_logprobs.length, 3);
    assert.equal(t.top_logprobs[0].token, t.token);
    assert.ok(t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob);
    assert.ok(Math.abs(t.top_logprobs[0].logprob - t.logprob) < 1e-4);
  }
});

test('enable_thinking false renders the closed think block (top level and chat_template_kwargs)', async () => {
  const on = await client.chat.completions.create({ model: 'qwen3-tiny', messages: franceMessages, max_tokens: 1 });
  for (const flag of [{ enable_thinking: false }, { chat_template_kwargs: { enable_thinking: false } }]) {
    const off = await client.chat.completions.create({ model: 'qwen3-tiny', messages: franceMessages, max_tokens: 1, ...flag });
    assert.equal(off.usage.prompt_tokens, on.usage.prompt_tokens + 4);  // <think>\n\n</think>\n\n
  }
});

test('max_tokens 0 and max_completion_tokens', async () => {
  const zero = await client.completions.create({ model: 'qwen3-tiny', prompt, max_tokens: 0 });
  assert.equal(zero.usage.completion_tokens, 0);
  assert.equal(zero.choices[0].finish_reason, 'length');
  const r = await client.chat.completions.create({ model: 'qwen3-tiny', messages: franceMessages, max_completion_tokens: 3, ignore_eos: true });
  assert.equal(r.usage.completion_tokens, 3);
});

test('models, health and metrics', async () => {
  const models = await client.models.list();
  assert.equal(models.data[0].id, 'qwen3-tiny');
  assert.deepEqual(await (await fetch(server.url + '/health')).json(), { status: 'ok' });
  const metrics = await (await fetch(server.url + '/metrics')).text();
  for (const name of ['qwen3_requests_total', 'qwen3_generation_tokens_total', 'qwen3_queue_length',
                      'qwen3_generation_tokens_per_second', 'qwen3_time_to_first_token_seconds_count'])
    assert.match(metrics, new RegExp('^' + name, 'm'));
  assert.match(metrics, /^qwen3_generation_tokens_total [1-9]/m);
});
