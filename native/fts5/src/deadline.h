#ifndef FENEC_DEADLINE_H
#define FENEC_DEADLINE_H
/* Registers fenec_deadline(ms) on the connection (its statements interrupted once ms have passed) and its busy handler, which an interrupt ends and fenec_busy_timeout(ms) bounds (deadline.c). */
int fenecRegisterDeadline(sqlite3 *db);
#endif
