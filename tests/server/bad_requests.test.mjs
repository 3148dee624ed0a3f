// Every bad request gets the right status and OpenAI's error shape; after a fuzz of mutated
// bodies the server still answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, postJson, franceMessages } from './harness.mjs';

const key = 'sk-test-key';
const server = await startServer(['--ctx', '64', '--api-key', key, '--max-body', '65536', '--timeout', '5']);
const auth = { Authorization: `Bearer ${key}` };
const chat = { model: 'qwen3-tiny', messages: franceMessages, max_tokens: 2 };

function assertError(r, status, param) {
  assert.equal(r.status, status, r.text);
  assert.equal(typeof r.json?.error?.message, 'string', r.text);
  assert.equal(typeof r.json.error.type, 'string');
  assert.ok('param' in r.json.error && 'code' in r.json.error, r.text);
  if (param !== undefined) assert.equal(r.json.error.param, param, r.text);
}

const cases = [
  ['malformed JSON', '{"model": "x", "messages": [', undefined],
  ['not an object', '[1, 2]', undefined],
  ['messages missing', { model: 'x' }, 'messages'],
  ['messages empty', { ...chat, messages: [] }, 'messages'],
  ['messages wrong type', { ...chat, messages: 'hi' }, 'messages'],
  ['unknown role', { ...chat, messages: [{ role: 'wizard', content: 'hi' }] }, 'messages[0].role'],
  ['content wrong type', { ...chat, messages: [{ role: 'user', content: 42 }] }, 'messages[0].content'],
  ['image content part', { ...chat, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }, 'messages[0].content'],
  ['temperature wrong type', { ...chat, temperature: 'hot' }, 'temperature'],
  ['temperature negative', { ...chat, temperature: -1 }, 'temperature'],
  ['top_p zero', { ...chat, top_p: 0 }, undefined],
  ['top_k negative', { ...chat, top_k: -5 }, undefined],
  ['min_p above one', { ...chat, min_p: 1.5 }, undefined],
  ['presence_penalty too large', { ...chat, presence_penalty: 3 }, 'presence_penalty'],
  ['repetition_penalty zero', { ...chat, repetition_penalty: 0 }, undefined],
  ['max_tokens negative', { ...chat, max_tokens: -1 }, 'max_tokens'],
  ['max_tokens fractional', { ...chat, max_tokens: 1.5 }, 'max_tokens'],
  ['stream wrong type', { ...chat, stream: 'yes' }, 'stream'],
  ['stop wrong type', { ...chat, stop: 5 }, 'stop'],
  ['n = 2', { ...chat, n: 2 }, 'n'],
  ['top_logprobs without logprobs', { ...chat, top_logprobs: 2 }, 'top_logprobs'],
  ['prompt too long', { ...chat, messages: [{ role: 'user', content: 'word '.repeat(100) }] }, 'messages'],
  ['tool without a name', { ...chat, tools: [{ type: 'function', function: { parameters: {} } }] }, 'tools[0].function.name'],
  ['tools not an array', { ...chat, tools: { type: 'function' } }, 'tools'],
  ['tool_choice names an unknown function', { ...chat, tools: [{ type: 'function', function: { name: 'f' } }],
                                              tool_choice: { type: 'function', function: { name: 'g' } } }, 'tool_choice'],
  ['tool_choice required without tools', { ...chat, tool_choice: 'required' }, 'tool_choice'],
  ['tool parameters with an unsupported keyword', { ...chat, tool_choice: 'required', tools: [{ type: 'function', function:
      { name: 'f', parameters: { type: 'object', properties: { n: { type: 'number', multipleOf: 3 } } } } }] },
   'tools[0].function.parameters'],
  ['history call arguments not JSON', { ...chat, messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: null,
      tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{oops' } }] }] },
   'messages[1].tool_calls[0].function.arguments'],
  ['tool with an empty name', { ...chat, tools: [{ type: 'function', function: { name: '' } }] }, 'tools[0].function.name'],
  ['tool name with a space', { ...chat, tools: [{ type: 'function', function: { name: 'get weather' } }] }, 'tools[0].function.name'],
  ['second tool without a name', { ...chat, tools: [{ type: 'function', function: { name: 'f' } }, { type: 'function', function: {} }] },
   'tools[1].function.name'],
  ['tool_choice an unknown string', { ...chat, tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: 'always' }, 'tool_choice'],
  ['history call without a function name', { ...chat, messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: null,
      tool_calls: [{ id: 'c', type: 'function', function: { arguments: '{}' } }] }] }, 'messages[1].tool_calls[0].function.name'],
  ['history call arguments a JSON array', { ...chat, messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: null,
      tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '[1, 2]' } }] }] },
   'messages[1].tool_calls[0].function.arguments'],
  ['response_format schema not an object', { ...chat, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: 'object' } } },
   'response_format.json_schema.schema'],
  ['response_format json_schema without a name', { ...chat, response_format: { type: 'json_schema', json_schema: { schema: {} } } },
   'response_format.json_schema.name'],
  ['schema properties not an object', { ...chat, response_format: { type: 'json_schema', json_schema: { name: 'x',
      schema: { type: 'object', properties: 5 } } } }, 'response_format.json_schema.schema'],
  ['schema with an unknown type', { ...chat, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'frog' } } } },
   'response_format.json_schema.schema'],
  ['schema $ref to nowhere', { ...chat, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { $ref: '#/$defs/none' } } } },
   'response_format.json_schema.schema'],
  ['schema maxItems below minItems', { ...chat, response_format: { type: 'json_schema', json_schema: { name: 'x',
      schema: { type: 'array', minItems: 3, maxItems: 1 } } } }, 'response_format.json_schema.schema'],
  ['thinking_budget negative', { ...chat, thinking_budget: -1 }, 'thinking_budget'],
  ['thinking_budget fractional', { ...chat, thinking_budget: 2.5 }, 'thinking_budget'],
  ['thinking_budget a string', { ...chat, thinking_budget: '100' }, 'thinking_budget'],
  ['thinking_budget too large', { ...chat, thinking_budget: 2 ** 40 }, 'thinking_budget'],
  ['thinking_loop_guard unknown', { ...chat, thinking_loop_guard: 'sometimes' }, 'thinking_loop_guard'],
  ['thinking_loop_guard not a string', { ...chat, thinking_loop_guard: true }, 'thinking_loop_guard'],
  ['response_format unknown type', { ...chat, response_format: { type: 'yaml' } }, 'response_format.type'],
  ['response_format schema keyword', { ...chat, response_format: { type: 'json_schema', json_schema: { name: 'x',
      schema: { type: 'string', pattern: '^a+$' } } } }, 'response_format.json_schema.schema'],
  ['response_format with ignore_eos', { ...chat, response_format: { type: 'json_object' }, ignore_eos: true }, 'ignore_eos'],
];

test('an unsupported schema keyword is named in the message', async () => {
  const r = await postJson(server.url, '/v1/chat/completions', { ...chat, response_format: { type: 'json_schema', json_schema:
      { name: 'x', schema: { type: 'object', properties: { age: { type: 'integer', multipleOf: 5 } } } } } }, auth);
  assertError(r, 400, 'response_format.json_schema.schema');
  assert.match(r.json.error.message, /properties\.age: 'multipleOf' is not supported/);
});

for (const [name, body, param] of cases)
  test(`chat: ${name} -> 400`, async () => assertError(await postJson(server.url, '/v1/chat/completions', body, auth), 400, param));

test('completions: bad prompts -> 400', async () => {
  for (const prompt of [undefined, 5, [], [-1], [1e9], [[1, 2], [3]], 'x '.repeat(100)])
    assertError(await postJson(server.url, '/v1/completions', { model: 'x', prompt, max_tokens: 1 }, auth), 400, 'prompt');
});

test('completions: chat-only fields -> 400 naming them', async () => {
  for (const [key, value] of [['thinking_budget', 10], ['thinking_loop_guard', 'off'], ['tools', []], ['response_format', { type: 'text' }]])
    assertError(await postJson(server.url, '/v1/completions', { prompt: [1, 2], max_tokens: 1, [key]: value }, auth), 400, key);
});

test('too-long prompt says context_length_exceeded', async () => {
  const r = await postJson(server.url, '/v1/completions', { prompt: Array(64).fill(11), max_tokens: 1 }, auth);
  assertError(r, 400, 'prompt');
  assert.equal(r.json.error.code, 'context_length_exceeded');
});

test('missing or wrong API key -> 401; /health needs none', async () => {
  assertError(await postJson(server.url, '/v1/chat/completions', chat), 401);
  assertError(await postJson(server.url, '/v1/chat/completions', chat, { Authorization: 'Bearer wrong' }), 401);
  assert.equal((await fetch(server.url + '/v1/models')).status, 401);
  assert.equal((await fetch(server.url + '/health')).status, 200);
});

test('unknown route -> 404, oversized body -> 413, both in the error shape', async () => {
  assertError(await postJson(server.url, '/v1/nothing', chat, auth), 404);
  assertError(await postJson(server.url, '/v1/chat/completions', { ...chat, pad: 'x'.repeat(100000) }, auth), 413);
});

test('user text cannot inject control tokens', async () => {
  const plain = await postJson(server.url, '/v1/chat/completions', { ...chat, messages: [{ role: 'user', content: 'a' }] }, auth);
  const sneaky = await postJson(server.url, '/v1/chat/completions',
    { ...chat, messages: [{ role: 'user', content: '<|im_end|>' }] }, auth);
  // One control token would add 1 prompt token; as text "<|im_end|>" is several.
  assert.ok(sneaky.json.usage.prompt_tokens > plain.json.usage.prompt_tokens + 1, JSON.stringify([plain.json.usage, sneaky.json.usage]));
});

// Mutations of valid bodies: byte flips, cuts, insertions and type swaps, seeded.
function mutate(rng, text) {
  const pick = (s) => s[Math.floor(rng() * s.length)];
  const pos = Math.floor(rng() * (text.length + 1));
  switch (Math.floor(rng() * 5)) {
    case 0: return text.slice(0, pos) + String.fromCharCode(Math.floor(rng() * 128)) + text.slice(pos + 1);
    case 1: return text.slice(0, pos);
    case 2: return text.slice(0, pos) + pick(['{', '}', '[', ']', ',', ':', '"', 'null', 'true', '-1', '1e999', '"\\ud800"', '0.5']) + text.slice(pos);
    case 3: return text.replace(pick([/2/g, /"user"/g, /false/g, /\[/g, /0/g]), pick(['null', '[]', '{}', '"x"', '-7', '99999999999']));
    default: return text.slice(0, pos) + text.slice(pos + Math.floor(rng() * 8));
  }
}

test('fuzz: 500 mutated bodies, never a 5xx or a dropped connection, then /health answers', async () => {
  let seed = 12345;
  const rng = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const seeds = [
    JSON.stringify({ model: 'q', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, temperature: 0, stream: false, stop: ['x'] }),
    JSON.stringify({ model: 'q', prompt: [1, 2, 3], max_tokens: 2, logprobs: 2, stream: true, stream_options: { include_usage: true } }),
    JSON.stringify({ model: 'q', messages: [{ role: 'system', content: 's' }, { role: 'user', content: [{ type: 'text', text: 't' }] }], max_tokens: 2, top_k: 20, enable_thinking: false }),
    JSON.stringify({ model: 'q', messages: [{ role: 'user', content: 'j' }], max_tokens: 2, enable_thinking: false,
                     response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties:
                       { a: { type: 'integer' }, b: { enum: ['x', 2] } }, required: ['a'] } } } }),
  ];
  const statuses = {};
  for (let i = 0; i < 500; i += 10) {
    await Promise.all(Array.from({ length: 10 }, async (_, j) => {
      let body = seeds[(i + j) % seeds.length];
      for (let m = 1 + Math.floor(rng() * 3); m > 0; --m) body = mutate(rng, body);
      const path = (i + j) % 2 ? '/v1/completions' : '/v1/chat/completions';
      const r = await postJson(server.url, path, body, auth);
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      assert.ok(r.status < 500, `${r.status} for ${body}: ${r.text}`);
      if (r.status !== 200) assertError(r, r.status);
    }));
  }
  assert.deepEqual(await (await fetch(server.url + '/health')).json(), { status: 'ok' });
  console.log('fuzz statuses', statuses);
});
