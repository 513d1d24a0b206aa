/**
 * The benches' programs: fenec-server and fenec-router started as processes of their own on free
 * ports (resolved with the URL their `listening` log line names), and the server token's admin calls.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Starts `node ROOT/script ARGS` and resolves with the URL it listens on. */
export function startProgram(children: ChildProcess[], script: string, args: string[]): Promise<string> {
  const child = spawn(process.execPath, [path.join(ROOT, script), ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, FENEC_TOKEN: '' } });
  children.push(child);
  return new Promise((resolve, reject) => {
    let text = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      for (const line of text.split('\n')) {
        try {
          const entry = JSON.parse(line) as { msg?: string; url?: string };
          if (entry.msg === 'listening') resolve(entry.url!);
        } catch {
          // not a whole line yet
        }
      }
    });
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}):\n${text}`)));
  });
}

/** One JSON call with `token`; throws with the answer when it is not a 2xx. */
export async function call(base: string, token: string, method: string, route: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${base}${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${route} → ${response.status} ${text}`);
  return text === '' ? undefined : JSON.parse(text);
}
