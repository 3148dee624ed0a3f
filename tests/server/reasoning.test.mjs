// Reasoning control seen from the openai client: thinking_budget closes the think block within
// the budget and its grace, usage reports reasoning_tokens (streamed too), the loop guard says what
// it did in choices[0].reasoning_control and in /metrics.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, model, idsOfChat } from './harness.mjs';

// Qwen3.5's template writes "<think>\n" into the prompt, so the reply reasons from its first token
// even with random weights: the tiny Qwen3 weights served with that template.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qwen3-thinking-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
for (const file of ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'])
  fs.symlinkSync(path.resolve(model, file), path.join(dir, file));
fs.symlinkSync(path.resolve(model, '../qwen35-chat/chat_template.jinja'), path.join(dir, 'chat_template.jinja'));
const addedTokens = JSON.parse(fs.readFileSync(path.join(model, 'tokenizer.json'))).added_tokens;
const thinkEnd = addedTokens.find((t) => t.content === '</think>').id;
const grace = 32;  // docs/server.md: the budget's grace

const server = await startServer(['--ctx', '1024', '--max-seqs', '4'], dir);
const client = server.client();
const ask = (extra) => ({
  model: 'x', messages: [{ role: 'user', content: 'Count the primes below 50.' }], temperature: 1, seed: 7,
  max_tokens: 100, logprobs: true, return_tokens_as_token_ids: true, thinking_loop_guard: 'off', ...extra,
});
const controlOf = (choice) => (choice.reasoning_control ?? []).map((e) => `${e.cause}:${e.action}`);
async function metric(name) {
  const text = await (await fetch(server.url + '/metrics')).text();
  const escaped = name.replace(/[{}"]/g, (c) => '\\' + c);
  return Number(text.match(new RegExp(`^${escaped} (\\d+)`, 'm'))[1]);
}

test('thinking_budget closes the think block within budget + grace, and the answer follows', async () => {
  for (const budget of [0, 4, 16]) {
    const r = await client.chat.completions.create(ask({ thinking_budget: budget }));
    const choice = r.choices[0];
    const ids = idsOfChat(choice);
    const reasoning = r.usage.completion_tokens_details.reasoning_tokens;
    assert.equal(ids.indexOf(thinkEnd), reasoning, `budget ${budget}: the tokens before </think> are the reasoning`);
    assert.ok(reasoning > budget && reasoning <= budget + grace, `budget ${budget}: ${reasoning} reasoning tokens`);
    assert.deepEqual(controlOf(choice), ['thinking_budget:closed_thinking']);
    assert.equal(choice.reasoning_control[0].reasoning_tokens, reasoning - 1, 'before the forced line break');
    assert.equal(typeof choice.message.reasoning_content, 'string');
    assert.ok(choice.message.reasoning_content.endsWith('\n'), JSON.stringify(choice.message.reasoning_content));
    assert.equal(typeof choice.message.content, 'string');
    assert.ok(ids.length > reasoning + 3, 'the answer comes after "</think>\\n\\n"');
  }
});

test('streamed: the same reasoning, answer, reasoning_tokens and reasoning_control', async () => {
  const whole = await client.chat.completions.create(ask({ thinking_budget: 8 }));
  let reasoning = '', content = '', usage = null, control = null;
  const stream = await client.chat.completions.create({ ...ask({ thinking_budget: 8 }), stream: true,
                                                        stream_options: { include_usage: true } });
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    reasoning += choice.delta.reasoning_content ?? '';
    content += choice.delta.content ?? '';
    if (choice.finish_reason) control = choice.reasoning_control;
  }
  assert.equal(reasoning, whole.choices[0].message.reasoning_content);
  assert.equal(content, whole.choices[0].message.content);
  assert.deepEqual(usage.completion_tokens_details, whole.usage.completion_tokens_details);
  assert.deepEqual(control, whole.choices[0].reasoning_control);
});

test('without a budget the reasoning_tokens are the tokens before </think>, or all of them', async () => {
  const r = await client.chat.completions.create(ask({ max_tokens: 60 }));
  const ids = idsOfChat(r.choices[0]);
  const end = ids.indexOf(thinkEnd);
  assert.equal(r.usage.completion_tokens_details.reasoning_tokens, end === -1 ? ids.length : end);
  assert.equal(r.choices[0].reasoning_control, undefined);
});

test('thinking off: no reasoning, no tokens counted, nothing to control', async () => {
  const r = await client.chat.completions.create(ask({ thinking_budget: 0, enable_thinking: false }));
  assert.equal(r.usage.completion_tokens_details.reasoning_tokens, 0);
  assert.equal(r.choices[0].message.reasoning_content, undefined);
  assert.equal(r.choices[0].reasoning_control, undefined);
});

// A repetition penalty below 1 favours the tokens already there: the thinking loops.
const looping = { temperature: 0, repetition_penalty: 0.3, max_tokens: 200 };

test('the loop guard closes a looping think block, says so and counts it', async () => {
  const closedBefore = await metric('qwen3_reasoning_control_total{cause="loop",action="closed_thinking"}');
  const r = await client.chat.completions.create(ask({ ...looping, thinking_loop_guard: 'close' }));
  const choice = r.choices[0];
  assert.deepEqual(controlOf(choice), ['loop:closed_thinking']);
  const reasoning = r.usage.completion_tokens_details.reasoning_tokens;
  assert.equal(idsOfChat(choice).indexOf(thinkEnd), reasoning);
  assert.equal(choice.reasoning_control[0].reasoning_tokens, reasoning - 1);
  assert.equal(await metric('qwen3_reasoning_control_total{cause="loop",action="closed_thinking"}'), closedBefore + 1);
  // The guard off, the same request loops on to max_tokens.
  const unguarded = await client.chat.completions.create(ask({ ...looping, thinking_loop_guard: 'off' }));
  assert.equal(unguarded.usage.completion_tokens_details.reasoning_tokens, looping.max_tokens);
  assert.equal(unguarded.choices[0].reasoning_control, undefined);
});

test('thinking_loop_guard "penalize" raises the presence penalty first', async () => {
  const raisedBefore = await metric('qwen3_reasoning_control_total{cause="loop",action="raised_presence_penalty"}');
  const r = await client.chat.completions.create(ask({ ...looping, thinking_loop_guard: 'penalize' }));
  const control = controlOf(r.choices[0]);
  assert.equal(control[0], 'loop:raised_presence_penalty');
  assert.ok(control.length === 1 || (control.length === 2 && control[1] === 'loop:closed_thinking'), control.join());
  assert.equal(await metric('qwen3_reasoning_control_total{cause="loop",action="raised_presence_penalty"}'), raisedBefore + 1);
  const closed = await client.chat.completions.create(ask({ ...looping, thinking_loop_guard: 'close' }));
  const at = (c) => c.reasoning_control[0].reasoning_tokens;
  assert.equal(at(r.choices[0]), at(closed.choices[0]), 'the same loop seen at the same token');
});

test('/metrics counts the reasoning tokens', async () => {
  const before = await metric('qwen3_reasoning_tokens_total');
  const r = await client.chat.completions.create(ask({ thinking_budget: 4 }));
  assert.equal(await metric('qwen3_reasoning_tokens_total'), before + r.usage.completion_tokens_details.reasoning_tokens);
});
