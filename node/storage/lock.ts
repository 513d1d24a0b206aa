/**
 * The writer's lock of a `.fenec` file: `F.lock` beside it, holding `{pid, program, start}`.
 *
 * Two processes writing one SQLite file through two catalogues corrupt it, so a second writer is
 * refused at open, told who holds the file. A lock left by a killed process is taken over: its
 * holder is gone when no process has its pid, or when the process that has it now started at
 * another time than the one written (the pid was reused). Start times come from /proc (Linux);
 * elsewhere the pid alone decides.
 */
import * as fs from 'node:fs';
import { FenecError } from '../../shared/errors.js';

export interface FileLock {
  /** The lock file's path (`F.lock`). */
  readonly path: string;
  /** Removes the lock file if it still names this process; a no-op after the first call. */
  release(): void;
}

interface Holder {
  readonly pid: number;
  readonly program: string;
  /** Process start time in clock ticks since boot (/proc/PID/stat field 22), when known. */
  readonly start: number | undefined;
}

/** How long a lock file may stay empty or half-written before it counts as left by a crash. */
const UNREADABLE_GRACE_MS = 200;
/** How long a takeover waits before checking it won, so that a concurrent taker's rename lands first. */
const TAKEOVER_SETTLE_MS = 25;

/**
 * Takes `file`'s writer lock for this process, in the name of `program` (shown to a refused writer).
 *
 * @throws FenecError `lock_held` when a live process holds it, naming that process's pid;
 *   `cannot_open` when the lock file cannot be written (a read-only directory).
 */
export function acquireLock(file: string, program: string): FileLock {
  const path = `${file}.lock`;
  const self: Holder = { pid: process.pid, program, start: startTime(process.pid) };
  const content = JSON.stringify(self);

  if (createExclusive(path, content)) return new HeldLock(path, self);

  const holder = readHolderPatiently(path);
  if (holder !== undefined && isAlive(holder)) throw lockHeld(file, holder);

  // The holder is gone (or never finished writing): replace its lock in one rename, so that no
  // moment exists without a lock file for a third process to create its own.
  const temp = `${path}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(temp, content);
    fs.renameSync(temp, path);
  } catch (err) {
    fs.rmSync(temp, { force: true });
    throw cannotWrite(path, err);
  }
  sleep(TAKEOVER_SETTLE_MS);
  const now = readHolder(path);
  if (now === undefined || !sameProcess(now, self)) {
    // Another process took it over at the same moment, and its rename came last: it holds the file.
    if (now !== undefined) throw lockHeld(file, now);
    throw new FenecError('lock_held', `${file} is being taken over by another process; try again`);
  }
  return new HeldLock(path, self);
}

class HeldLock implements FileLock {
  readonly path: string;
  readonly #self: Holder;
  #released = false;

  constructor(path: string, self: Holder) {
    this.path = path;
    this.#self = self;
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    try {
      const holder = readHolder(this.path);
      // A lock that names another process now is theirs (ours was taken over after a wrong judgement
      // of death, or removed by hand and retaken): removing it would let a third writer in.
      if (holder === undefined || !sameProcess(holder, this.#self)) return;
      fs.rmSync(this.path, { force: true });
    } catch {
      // Release runs on the way out (exit, signals); a lock it cannot remove is taken over later.
    }
  }
}

/** Creates the lock file with O_EXCL; false when it exists already. */
function createExclusive(path: string, content: string): boolean {
  let fd: number;
  try {
    fd = fs.openSync(path, 'wx');
  } catch (err) {
    if (errorCode(err) === 'EEXIST') return false;
    throw cannotWrite(path, err);
  }
  try {
    fs.writeSync(fd, content);
  } finally {
    fs.closeSync(fd);
  }
  return true;
}

/**
 * Reads the holder, waiting a little while the file is empty or not JSON: between another
 * process's O_EXCL create and its write, the file exists without content.
 */
function readHolderPatiently(path: string): Holder | undefined {
  const deadline = Date.now() + UNREADABLE_GRACE_MS;
  for (;;) {
    const holder = readHolder(path);
    if (holder !== undefined || Date.now() >= deadline) return holder;
    sleep(10);
  }
}

function readHolder(path: string): Holder | undefined {
  let text: string;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return undefined;
    throw cannotWrite(path, err);
  }
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null) return undefined;
    const { pid, program, start } = value as Record<string, unknown>;
    if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) return undefined;
    return {
      pid,
      program: typeof program === 'string' ? program : 'another process',
      start: typeof start === 'number' ? start : undefined,
    };
  } catch {
    return undefined;
  }
}

function isAlive(holder: Holder): boolean {
  try {
    process.kill(holder.pid, 0);
  } catch (err) {
    // EPERM: the process exists but belongs to another user — alive all the same.
    if (errorCode(err) !== 'EPERM') return false;
  }
  const stat = procStat(holder.pid);
  if (stat === undefined) return true;
  // A zombie has exited; only its parent has not reaped it yet.
  if (stat.state === 'Z' || stat.state === 'X') return false;
  return holder.start === undefined || stat.start === undefined || holder.start === stat.start;
}

function sameProcess(a: Holder, b: Holder): boolean {
  return a.pid === b.pid && a.start === b.start;
}

function startTime(pid: number): number | undefined {
  return procStat(pid)?.start;
}

/** State (field 3) and start time (field 22) of /proc/PID/stat; undefined off Linux or when gone. */
function procStat(pid: number): { state: string; start: number | undefined } | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // Field 2 is the command name in parentheses and may hold spaces and ')': count from the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = fields[0] ?? '';
  const start = Number(fields[19]);
  return { state, start: Number.isSafeInteger(start) ? start : undefined };
}

function lockHeld(file: string, holder: Holder): FenecError {
  return new FenecError(
    'lock_held',
    `${file} is in use by ${holder.program} (pid ${holder.pid}); stop it, or read with --read-only, ` +
      'or go through its server with --url',
  );
}

function cannotWrite(path: string, err: unknown): FenecError {
  const reason = err instanceof Error ? err.message : String(err);
  return new FenecError('cannot_open', `cannot write the lock file ${path}: ${reason}`, { cause: err });
}

function errorCode(err: unknown): unknown {
  return (err as NodeJS.ErrnoException | null)?.code;
}

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
