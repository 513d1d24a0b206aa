/**
 * SIGSTOP that has taken hold. kill(2) returns once the signal is queued: the kernel wakes one thread of the
 * process to begin the stop, and the process's other threads run on until that one is scheduled and stops them —
 * tens of milliseconds on a loaded machine. A nats-server "paused" so acked a publish sent after the kill (issue 31:
 * the log_unavailable test got a 200 for a write sent while every server had been sent SIGSTOP, and the write was
 * in the log). A test that claims a process is paused waits here until it is.
 */
import * as fs from 'node:fs';

/** Sends SIGSTOP to each process and resolves once every thread of each is stopped (or the process is gone). */
export async function pause(pids: readonly number[], withinMs = 10_000): Promise<void> {
  for (const pid of pids) process.kill(pid, 'SIGSTOP');
  const deadline = Date.now() + withinMs;
  for (;;) {
    const running = pids.flatMap(runningThreads);
    if (running.length === 0) return;
    if (Date.now() > deadline)
      throw new Error(`SIGSTOP did not stop threads ${running.join(', ')} within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** The threads of `pid` (as pid/tid) not stopped: their state in /proc/PID/task/TID/stat is not T (nor Z or X). */
function runningThreads(pid: number): string[] {
  let tids: string[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return []; // the process is gone
  }
  return tids
    .filter((tid) => {
      let stat: string;
      try {
        stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      } catch {
        return false; // the thread ended
      }
      // The state follows the command name, which is in parentheses and may hold any character.
      const state = stat[stat.lastIndexOf(')') + 2];
      return state !== 'T' && state !== 'Z' && state !== 'X';
    })
    .map((tid) => `${pid}/${tid}`);
}
