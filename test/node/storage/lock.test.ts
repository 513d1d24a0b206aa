import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { acquireLock } from '../../../node/storage/lock.js';
import { FenecError } from '../../../shared/errors.js';

const holdLock = fileURLToPath(new URL('../../fixtures/hold-lock.js', import.meta.url));

/** Starts a child process that holds `file`'s lock, resolved once it says so. */
async function holder(file: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [holdLock, file], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  expect(line.toString()).to.equal('locked\n');
  return child;
}

async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

describe('acquireLock', () => {
  let dir: string;
  let file: string;
  let children: ChildProcess[];

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fenec-lock-'));
    file = path.join(dir, 'notes.fenec');
    children = [];
  });

  afterEach(async () => {
    await Promise.all(children.map(killHard));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('writes F.lock holding this pid, the program and the start time, and removes it on release', () => {
    const lock = acquireLock(file, 'fenec-server');
    expect(lock.path).to.equal(`${file}.lock`);
    const content = JSON.parse(fs.readFileSync(lock.path, 'utf8'));
    expect(content).to.include({ pid: process.pid, program: 'fenec-server' });
    if (process.platform === 'linux') expect(content.start).to.be.a('number');
    lock.release();
    expect(fs.existsSync(lock.path)).to.equal(false);
  });

  it('refuses a live holder, naming its pid and program', async () => {
    const child = await holder(file);
    children.push(child);
    expect(() => acquireLock(file, 'fenec-server'))
      .to.throw(FenecError)
      .with.property('code', 'lock_held');
    expect(() => acquireLock(file, 'fenec-server')).to.throw(`pid ${child.pid}`);
    expect(() => acquireLock(file, 'fenec-server')).to.throw('hold-lock');
  });

  it('refuses a second lock of the same file in the same process', () => {
    const lock = acquireLock(file, 'fenec-server');
    try {
      expect(() => acquireLock(file, 'fenec query')).to.throw(`pid ${process.pid}`);
    } finally {
      lock.release();
    }
  });

  it('takes over the lock of a holder killed with SIGKILL', async () => {
    const child = await holder(file);
    await killHard(child);
    const lock = acquireLock(file, 'fenec-server');
    expect(JSON.parse(fs.readFileSync(lock.path, 'utf8')).pid).to.equal(process.pid);
    lock.release();
    expect(fs.existsSync(lock.path)).to.equal(false);
  });

  it('takes over a lock whose pid now belongs to a process started at another time', function () {
    if (process.platform !== 'linux') this.skip();
    // The parent (mocha's shell or runner) is alive, but did not start at tick 1: a reused pid.
    fs.writeFileSync(`${file}.lock`, JSON.stringify({ pid: process.ppid, program: 'old', start: 1 }));
    const lock = acquireLock(file, 'fenec-server');
    expect(JSON.parse(fs.readFileSync(lock.path, 'utf8')).pid).to.equal(process.pid);
    lock.release();
  });

  it('takes over a lock file left empty by a crash between create and write', () => {
    fs.writeFileSync(`${file}.lock`, '');
    const lock = acquireLock(file, 'fenec-server');
    expect(JSON.parse(fs.readFileSync(lock.path, 'utf8')).pid).to.equal(process.pid);
    lock.release();
  });

  it('leaves a lock that names another process alone on release', () => {
    const lock = acquireLock(file, 'fenec-server');
    const foreign = JSON.stringify({ pid: process.ppid, program: 'someone else' });
    fs.writeFileSync(lock.path, foreign);
    lock.release();
    expect(fs.readFileSync(lock.path, 'utf8')).to.equal(foreign);
  });

  it('says why when the lock file cannot be written', function () {
    if (process.getuid?.() === 0) this.skip(); // root writes into a read-only directory anyway
    fs.chmodSync(dir, 0o500);
    try {
      expect(() => acquireLock(file, 'fenec-server'))
        .to.throw(FenecError)
        .with.property('code', 'cannot_open');
    } finally {
      fs.chmodSync(dir, 0o700);
    }
  });
});
