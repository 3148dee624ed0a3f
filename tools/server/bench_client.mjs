// What the server benchmarks share: starting `qwen3 serve` on a free port, and reading one
// streamed response's server-sent events.
import { spawn } from 'node:child_process';

// Starts `binary serve model --port 0 ...args`; resolves once it listens, with its URL and a stop
// that waits for the process to exit.
export async function startServer(binary, model, args) {
  const proc = spawn(binary, ['serve', model, '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  process.on('exit', () => proc.kill('SIGKILL'));
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => { out += d; const m = out.match(/listening on (\S+)/); if (m) resolve(m[1]); });
    proc.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  return { url, stop: () => new Promise((resolve) => { proc.on('exit', resolve); proc.kill('SIGTERM'); }) };
}

// POSTs body (stream: true) to url + path and calls onChunk(chunk, secondsSinceStart) for every
// data event's JSON, in order.
export async function streamRequest(url, path, body, onChunk) {
  const start = performance.now();
  const res = await fetch(url + path, { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                        body: JSON.stringify({ ...body, stream: true }) });
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const bytes of res.body) {
    buffer += decoder.decode(bytes, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
      onChunk(JSON.parse(event.slice(6)), (performance.now() - start) / 1000);
    }
  }
}
