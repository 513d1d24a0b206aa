/**
 * How each program of a chaos round ended: its exit code or signal, when, the tail of its stderr, and whether the
 * nemesis ended it. A process that ended otherwise (a crash, a signal from the kernel: SIGBUS, SIGSEGV, the OOM
 * killer's SIGKILL) fails the round, named with its signal and its last lines: a log that just ends says nothing.
 */
import * as fs from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import type { ServerProcess } from '../integration/processes.js';

export interface Exit {
  readonly name: string;
  readonly pid: number;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly at: Date;
  /** Ended by the nemesis (its kill -9). */
  readonly expected: boolean;
  /** The last lines the process wrote on stderr. */
  readonly tail: string;
}

const TAIL_LINES = 12;

export class Exits {
  readonly all: Exit[] = [];
  readonly #expected = new WeakSet<ChildProcess>();
  #over = false;

  /** Records how `server`'s process ends, named `name` (a node, a router). */
  watch(name: string, server: ServerProcess): void {
    // 'close', not 'exit': by then the process's stderr is read to its end.
    server.child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
      if (this.#over) return;
      const lines = server.stderr().trimEnd().split('\n');
      this.all.push({
        name,
        pid: server.pid,
        code,
        signal,
        at: new Date(),
        expected: this.#expected.has(server.child),
        tail: lines.slice(-TAIL_LINES).join('\n'),
      });
    });
  }

  /** The nemesis is about to end this process. */
  expect(child: ChildProcess): void {
    this.#expected.add(child);
  }

  /** The round is over: the processes ended from now on are the clean-up's. */
  end(): void {
    this.#over = true;
  }

  unexpected(): Exit[] {
    return this.all.filter((exit) => !exit.expected);
  }

  /** One line per exit (the unexpected ones with their stderr's tail), for the round's summary. */
  summary(): string[] {
    return this.all.map((exit) =>
      exit.expected ? describe(exit) : `${describe(exit)}; its stderr ended:\n${exit.tail}`,
    );
  }
}

export function describe(exit: Exit): string {
  const how = exit.signal !== null ? `signal ${exit.signal}` : `exit code ${exit.code}`;
  const by = exit.expected ? "the nemesis's kill -9" : 'not by the nemesis';
  return `${exit.name} (pid ${exit.pid}) ended at ${exit.at.toISOString()} by ${how}, ${by}`;
}

/** A process's state as the kernel has it (R running, S sleeping, T stopped, Z zombie), or 'gone'. */
export function processState(pid: number): string {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!;
  } catch {
    return 'gone';
  }
}
