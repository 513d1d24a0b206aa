/**
 * Expired rows: a row whose `@ttl(D)` field is more than D in the past is out of every read already
 * (see rowFilter); deleting it, with its index entries (the triggers' work), reclaims the space.
 */
import type { Collection } from '../../schema/catalog.js';
import type { Connection } from '../../storage/sqlite.js';

/** Deletes the expired rows of every collection with an `@ttl` field; answers how many went. */
export function deleteExpired(db: Connection, collections: readonly Collection[], now: number): number {
  let deleted = 0;
  for (const collection of collections) {
    for (const field of collection.fields) {
      for (const annotation of field.def.annotations) {
        if (annotation.kind !== 'ttl') continue;
        const column = `${collection.table}.${field.column}`;
        deleted += db
          .prepare(`DELETE FROM ${collection.table} WHERE ${column} IS NOT NULL AND ${column} <= ?`)
          .run(now - annotation.ms).changes;
      }
    }
  }
  return deleted;
}
