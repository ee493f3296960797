// Runs a writer child process and kills it with SIGKILL once it has acknowledged `minAcks`
// operations, after a random extra delay. Resolves with the highest acknowledged number (-1: none).
import { spawn } from 'node:child_process';

export function runAndKill(
  script: string,
  args: string[],
  minAcks: number,
  maxExtraMs: number,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let acked = -1;
    let buffered = '';
    let stderr = '';
    let armed = false;
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        const match = /^ack (\d+)$/.exec(line);
        if (match) acked = Math.max(acked, Number(match[1]));
      }
      if (!armed && acked + 1 >= minAcks) {
        armed = true;
        setTimeout(() => child.kill('SIGKILL'), Math.floor(Math.random() * maxExtraMs));
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('exit', (_code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`writer exited on its own: ${stderr}`));
      else resolve(acked);
    });
  });
}
