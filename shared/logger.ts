/**
 * Log lines: one JSON object a line on stderr (pino), so that stdout stays the program's answer
 * (`fenec query`, the stdio MCP server) and a collector can parse every line.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * A logger naming `program` on every line. Writes synchronously: the lines are few (start, stop,
 * faults), and a line written just before exit — a fault, a refused start — must not be lost.
 */
export function createLogger(program: string): Logger {
  return pino({ name: program, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 2, sync: true }));
}
