// Constrained replies through the official openai client, on the random tiny model: every
// response_format reply validates against its schema (ajv), tool_choice "required" and named
// functions always give calls whose arguments validate, and streamed calls reassemble to the
// non-streamed reply.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import { startServer, postJson } from './harness.mjs';

const server = await startServer(['--ctx', '2048', '--max-seqs', '4']);
const client = server.client();
const ajv = new Ajv({ strict: true });
const messages = [{ role: 'user', content: 'Describe a person as JSON.' }];

const person = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 16 },
    age: { type: 'integer', minimum: 0, maximum: 150 },
    tags: { type: 'array', items: { enum: ['red', 'green', 'blue'] }, minItems: 1, maxItems: 3 },
    ok: { type: ['boolean', 'null'] },
    home: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 12 }, zip: { anyOf: [{ type: 'integer' }, { type: 'null' }] } },
      required: ['city', 'zip'],
      additionalProperties: false,
    },
    score: { type: 'number' },
  },
  required: ['name', 'age', 'tags', 'ok', 'home'],
  additionalProperties: false,
};
const format = { type: 'json_schema', json_schema: { name: 'person', schema: person, strict: true } };

const weather = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 12 }, unit: { enum: ['c', 'f'] }, days: { type: 'integer', minimum: 1, maximum: 14 } },
  required: ['city', 'unit', 'days'],
  additionalProperties: false,
};
const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: weather } },
  { type: 'function', function: { name: 'get_time', description: 'The time now', parameters: { type: 'object', properties: {}, additionalProperties: false } } },
];
const validators = { get_weather: ajv.compile(weather), get_time: ajv.compile(tools[1].function.parameters) };

test('json_schema: every reply validates against the schema (sampled and greedy)', async () => {
  const validate = ajv.compile(person);
  for (const [seed, temperature] of [[1, 1], [2, 1], [3, 1], [4, 1], [5, 0.7], [6, 1.2], [7, 0]]) {
    const r = await client.chat.completions.create({ model: 'qwen3-tiny', messages, response_format: format, seed, temperature,
                                                     max_tokens: 1000, enable_thinking: false });
    const { content } = r.choices[0].message;
    assert.equal(r.choices[0].finish_reason, 'stop', `seed ${seed}: ${content}`);
    const value = JSON.parse(content);
    assert.ok(validate(value), `seed ${seed}: ${content}\n${JSON.stringify(validate.errors)}`);
  }
});

test('json_object: every finished reply is a JSON object', async () => {
  // Nothing bounds a json_object's strings, and a random model seldom draws a closing quote (a
  // penalty stops it repeating one token): the replies that finish are checked, and some must.
  let finished = 0;
  for (const seed of [1, 2, 3, 4]) {
    const r = await client.chat.completions.create({ model: 'qwen3-tiny', messages, response_format: { type: 'json_object' },
                                                     seed, temperature: 1, frequency_penalty: 2, max_tokens: 1500,
                                                     enable_thinking: false });
    if (r.choices[0].finish_reason !== 'stop') continue;
    ++finished;
    const value = JSON.parse(r.choices[0].message.content);
    assert.equal(typeof value, 'object');
    assert.ok(value !== null && !Array.isArray(value));
  }
  assert.ok(finished >= 1);
});

test('json_schema with thinking on: the answer after any reasoning validates', async () => {
  const validate = ajv.compile(person);
  let answered = 0;
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({ model: 'qwen3-tiny', messages, response_format: format, seed, temperature: 1,
                                                     max_tokens: 1000 });
    if (r.choices[0].finish_reason !== 'stop') continue;  // thought until max_tokens: no answer to check
    ++answered;
    assert.ok(validate(JSON.parse(r.choices[0].message.content)), r.choices[0].message.content);
  }
  assert.ok(answered >= 1);
});

test('structured output streams the same text as the whole reply', async () => {
  const body = { model: 'qwen3-tiny', messages, response_format: format, temperature: 0, max_tokens: 1000, enable_thinking: false };
  const whole = await client.chat.completions.create(body);
  let content = '';
  for await (const chunk of await client.chat.completions.create({ ...body, stream: true }))
    content += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(content, whole.choices[0].message.content);
});

function checkCall(call) {
  assert.equal(call.type, 'function');
  assert.match(call.id, /^call_/);
  const validate = validators[call.function.name];
  assert.ok(validate, `unknown function ${call.function.name}`);
  const args = JSON.parse(call.function.arguments);
  assert.ok(validate(args), `${call.function.arguments}\n${JSON.stringify(validate.errors)}`);
}

test('tool_choice "required": always a call whose arguments validate', async () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    const r = await client.chat.completions.create({ model: 'qwen3-tiny', messages, tools, tool_choice: 'required',
                                                     parallel_tool_calls: false, seed, temperature: 1, max_tokens: 400,
                                                     enable_thinking: false });
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
    assert.equal(choice.message.tool_calls.length, 1);
    assert.equal(choice.message.content, null);
    checkCall(choice.message.tool_calls[0]);
  }
  // Parallel calls: every call that was finished validates.
  for (const seed of [7, 8]) {
    const r = await client.chat.completions.create({ model: 'qwen3-tiny', messages, tools, tool_choice: 'required', seed,
                                                     temperature: 1, max_tokens: 300, enable_thinking: false });
    const calls = r.choices[0].message.tool_calls;
    assert.ok(calls.length >= 1);
    const finished = r.choices[0].finish_reason === 'tool_calls' ? calls : calls.slice(0, -1);
    finished.forEach(checkCall);
  }
});

test('a named tool_choice calls that function', async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({ model: 'qwen3-tiny', messages, tools, seed, temperature: 1, max_tokens: 400,
                                                     tool_choice: { type: 'function', function: { name: 'get_time' } },
                                                     enable_thinking: false });
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    assert.deepEqual(r.choices[0].message.tool_calls.map((c) => c.function.name), ['get_time']);
    checkCall(r.choices[0].message.tool_calls[0]);
  }
});

test('streamed tool-call deltas reassemble to the non-streamed reply', async () => {
  for (const extra of [{ temperature: 0, parallel_tool_calls: false }, { temperature: 1, seed: 3 }, { temperature: 1, seed: 9, max_tokens: 150 }]) {
    const body = { model: 'qwen3-tiny', messages, tools, tool_choice: 'required', max_tokens: 400, enable_thinking: false, ...extra };
    const whole = (await client.chat.completions.create(body)).choices[0];
    const calls = [];
    let content = '', finish = null, names = 0;
    for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) {
      const choice = chunk.choices[0];
      if (!choice) continue;
      finish = choice.finish_reason ?? finish;
      content += choice.delta.content ?? '';
      assert.ok(!(choice.delta.content ?? '').includes('<tool_call>'), 'call markup leaked into content');
      for (const d of choice.delta.tool_calls ?? []) {
        if (d.id) {  // the first delta of a call: index, id, type, name
          assert.equal(d.index, calls.length);
          assert.equal(d.type, 'function');
          calls.push({ id: d.id, name: d.function.name, arguments: d.function.arguments ?? '' });
          ++names;
        } else {
          assert.equal(d.function.name, undefined);
          calls[d.index].arguments += d.function.arguments;
        }
      }
    }
    assert.equal(finish, whole.finish_reason);
    assert.equal(content, whole.message.content ?? '');
    assert.equal(names, whole.message.tool_calls.length);
    assert.deepEqual(calls.map(({ name, arguments: a }) => ({ name, a })),
                     whole.message.tool_calls.map((c) => ({ name: c.function.name, a: c.function.arguments })));
  }
  // The openai client's own stream accumulator builds the same calls.
  const body = { model: 'qwen3-tiny', messages, tools, tool_choice: 'required', max_tokens: 400, temperature: 0,
                 parallel_tool_calls: false, enable_thinking: false };
  const whole = (await client.chat.completions.create(body)).choices[0].message;
  const final = await client.beta.chat.completions.stream(body).finalChatCompletion();
  assert.deepEqual(final.choices[0].message.tool_calls.map((c) => [c.function.name, c.function.arguments]),
                   whole.tool_calls.map((c) => [c.function.name, c.function.arguments]));
});

test('tool_choice "none" hides the tools and parses nothing; "auto" shows them', async () => {
  const base = { model: 'qwen3-tiny', messages, tools, max_tokens: 1, enable_thinking: false };
  const none = await client.chat.completions.create({ ...base, tool_choice: 'none' });
  const auto = await client.chat.completions.create({ ...base, tool_choice: 'auto' });
  assert.ok(auto.usage.prompt_tokens > none.usage.prompt_tokens + 50, JSON.stringify([none.usage, auto.usage]));
});

test('history with tool calls and results renders; bad arguments are a 400 naming the field', async () => {
  const history = [
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris", "unit": "c", "days": 1}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 21}' },
  ];
  const r = await client.chat.completions.create({ model: 'qwen3-tiny', messages: history, tools, max_tokens: 2 });
  assert.ok(r.usage.prompt_tokens > 100);
  history[1].tool_calls[0].function.arguments = '{"city": "Par';
  const bad = await postJson(server.url, '/v1/chat/completions', { model: 'qwen3-tiny', messages: history, tools, max_tokens: 2 });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, 'messages[1].tool_calls[0].function.arguments');
});
