// Starts `qwen3 serve` on a free loopback port for a test file and always stops it.
import { spawn, execFileSync } from 'node:child_process';
import { after } from 'node:test';
import OpenAI from 'openai';

export const binary = process.env.QWEN3_BINARY ?? 'build/qwen3';
export const model = process.env.QWEN3_MODEL ?? 'tests/fixtures/models/qwen3-tiny';

// Resolves once the server printed its address; the server is killed when the test file ends.
export async function startServer(extraArgs = [], modelDir = model) {
  const proc = spawn(binary, ['serve', modelDir, '--host', '127.0.0.1', '--port', '0', '--threads', '1', ...extraArgs], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const stop = () => { if (proc.exitCode === null) proc.kill('SIGKILL'); };
  process.on('exit', stop);
  after(stop);
  const url = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('server did not start in 60 s: ' + out)), 60000);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/[\d.]+:\d+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited with ${code}: ${out}`)); });
  });
  return { url, proc, client: (options = {}) => new OpenAI({ baseURL: url + '/v1', apiKey: 'none', maxRetries: 0, ...options }) };
}

// Greedy ids computed directly by the engine, without the server.
export function generateIds(ids, n) {
  const out = execFileSync(binary, ['generate', model, '--ids', ids.join(','), '-n', String(n), '--threads', '1']);
  return out.toString().trim().split(',').map(Number);
}

// The ids of a reply asked for with logprobs and return_tokens_as_token_ids.
export function idsOfChat(choice) { return choice.logprobs.content.map((t) => Number(t.token.slice('token_id:'.length))); }
export function idsOfCompletion(choice) { return choice.logprobs.tokens.map((t) => Number(t.slice('token_id:'.length))); }

export async function postJson(url, path, body, headers = {}) {
  const res = await fetch(url + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON: left null for the test to judge */ }
  return { status: res.status, json, text };
}

// The "single" case of tests/fixtures/reference/chat_template.json: HF's ids for this message.
export const franceMessages = [{ role: 'user', content: 'What is the capital of France?' }];
export const franceIds = [151644, 872, 198, 3838, 374, 279, 6722, 315, 9625, 30, 151645, 198, 151644, 77091, 198];
