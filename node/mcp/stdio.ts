/**
 * MCP over stdio: one JSON-RPC message a line on stdin, one answer a line on stdout, nothing else
 * on stdout (logs go to stderr). The session ends when stdin does.
 */
import * as readline from 'node:readline';
import type { Readable, Writable } from 'node:stream';

/** The messages a line is answered with, as JSON, each written on a line of its own (none for a notification). */
export type LineAnswer = readonly string[] | undefined;

/**
 * Answers each line of `input` with the messages `answer` gives. Resolves when the input ends and
 * every answer is written.
 */
export async function serveLines(
  input: Readable,
  output: Writable,
  answer: (line: string) => LineAnswer | Promise<LineAnswer>,
): Promise<void> {
  const lines = readline.createInterface({ input, crlfDelay: Infinity, terminal: false });
  const pending = new Set<Promise<void>>();
  for await (const line of lines) {
    if (line.trim() === '') continue;
    const result = answer(line);
    if (result instanceof Promise) {
      // Answers that wait (the bridge's HTTP requests) may overlap; each is written whole when ready.
      const done = result.then((value) => write(output, value));
      pending.add(done);
      void done.finally(() => pending.delete(done));
    } else {
      write(output, result);
    }
  }
  await Promise.all(pending);
}

function write(output: Writable, messages: LineAnswer): void {
  if (messages === undefined || messages.length === 0) return;
  // JSON holds no raw newline (JSON.stringify escapes them): each message is exactly one line.
  output.write(`${messages.join('\n')}\n`);
}
