#!/usr/bin/env node
/**
 * A consistent copy of one tenant's file while its node keeps running: SQLite's online backup API
 * (better-sqlite3 `db.backup()`) reads one snapshot of the database, WAL included, whatever the
 * node writes meanwhile. The vector indexes live in the file, so the copy is the whole tenant.
 *
 *   node dist/deploy/tenant-backup.js SOURCE.fenec TARGET.fenec
 */
import * as fs from 'node:fs';
import Database from 'better-sqlite3';

async function main(argv: readonly string[]): Promise<number> {
  const [source, target] = argv;
  if (source === undefined || target === undefined || argv.length !== 2) {
    process.stderr.write('usage: tenant-backup SOURCE.fenec TARGET.fenec\n');
    return 2;
  }
  if (!fs.existsSync(source)) {
    process.stderr.write(`tenant-backup: ${source} does not exist\n`);
    return 1;
  }
  if (fs.existsSync(target)) {
    process.stderr.write(`tenant-backup: ${target} exists; the copy never overwrites a file\n`);
    return 1;
  }
  const db = new Database(source, { readonly: true, fileMustExist: true });
  try {
    const partial = `${target}.partial`;
    await db.backup(partial);
    fs.renameSync(partial, target);
    process.stderr.write(`tenant-backup: ${source} → ${target} (${fs.statSync(target).size} bytes)\n`);
  } finally {
    db.close();
  }
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
