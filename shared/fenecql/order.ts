/**
 * The whole order a read's rows come in, which the SQL and a cursor's keys both follow.
 */
import type { OrderItem } from './ast.js';

/**
 * The statement's order, then id for rows that tie on every field it names — in the direction of its
 * last field, so that `order year desc limit 10` is `year DESC, id DESC`: what a @sorted index
 * (entries in field, then id order) gives when read backward, stopping at the limit. Ties in id
 * ascending there would make SQLite sort every row.
 */
export function withIdTies(order: readonly OrderItem[]): readonly OrderItem[] {
  if (order.length === 0 || order.some((item) => item.field === 'id')) return order;
  return [...order, { field: 'id', direction: order[order.length - 1]!.direction }];
}
