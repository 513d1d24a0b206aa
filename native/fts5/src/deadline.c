/*
 * fenec_deadline(ms): stops the connection's statements once `ms` milliseconds have passed.
 *
 * A statement past its time limit (--statement-timeout) was stopped only by terminating the worker
 * thread that ran it: every tenant of that worker then lost its open file, its caches and its Faiss
 * indexes, and a new worker read them all again. SQLite can stop a statement itself:
 * sqlite3_interrupt(), which any thread may call, makes the connection's running statements fail with
 * SQLITE_INTERRUPT at their next step, and SQLite rolls back what they had begun. (The progress
 * handler would let the running thread look at a clock instead, but better-sqlite3 builds SQLite
 * without it.)
 *
 * So one thread of this extension keeps the armed deadlines and interrupts each connection whose
 * deadline has passed (within TICK_NS), once: what runs as the error unwinds (a ROLLBACK, the
 * catalogue read again) must run whole. An interrupt reaches only the statements running at that
 * moment; a request caught between two of them, or in JavaScript, runs on, and the serving thread's
 * watchdog terminates its worker a little later (node/workers/worker-pool.ts). The worker arms the deadline before each
 * request and disarms it after (node/storage/deadline.ts). `fenec_deadline(0)` disarms; closing the
 * connection disarms it too.
 *
 * A statement waiting for a lock that another program holds (SQLite's busy handler sleeping, up to
 * BUSY_TIMEOUT_MS) would not see the interrupt until the wait ended: the watchdog terminated its
 * worker meanwhile, and better-sqlite3, throwing SQLITE_BUSY into a terminating thread, aborted the
 * whole process. So the connection's busy handler is this file's: SQLite's waits, in slices of at most
 * TICK_NS, given up as soon as the connection is interrupted, BUSY_TIMEOUT_MS in all or what
 * `fenec_busy_timeout(ms)` sets.
 *
 * The library is linked `-z nodelete` (build.sh): SQLite unloads an extension with the last
 * connection that loaded it, and this thread's code must stay mapped.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3

#include "deadline.h"

typedef struct Armed {
  sqlite3 *db;
  long long atNs;
  struct Armed *next;
} Armed;

/*
 * The watcher looks at the deadlines every TICK_NS, so that arming one never has to wake it: a worker
 * arms and disarms a deadline for every request, thousands a second, and a wake-up is a switch of
 * threads each time (measured: 7 µs a request, against well under 1 µs this way). A statement is so
 * stopped up to TICK_NS past its deadline. After IDLE_NS with nothing armed the watcher sleeps until
 * the next arm wakes it.
 */
#define TICK_NS 10000000LL
#define IDLE_NS 1000000000LL

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed;
static Armed *armed = 0;
static int started = 0;
/* The watcher sleeps without a timeout: the next arm must wake it. */
static int sleeping = 0;
static long long lastArmedNs = 0;

static long long monotonicNs(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

static void *watch(void *unused) {
  (void)unused;
  pthread_mutex_lock(&mutex);
  for (;;) {
    const long long now = monotonicNs();
    for (Armed **link = &armed; *link != 0;) {
      Armed *a = *link;
      if (a->atNs <= now) {
        // Under the mutex: a connection is alive while armed (disarm() takes it out as it closes).
        sqlite3_interrupt(a->db);
        *link = a->next;
        free(a);
      } else {
        link = &a->next;
      }
    }
    if (armed == 0 && now - lastArmedNs > IDLE_NS) {
      sleeping = 1;
      pthread_cond_wait(&changed, &mutex);
      sleeping = 0;
    } else {
      const long long next = now + TICK_NS;
      struct timespec until = { (time_t)(next / 1000000000LL), (long)(next % 1000000000LL) };
      pthread_cond_timedwait(&changed, &mutex, &until);
    }
  }
  return 0;
}

/* Under the mutex. 0 when the thread is running (started now or before). */
static int startWatching(void) {
  if (started) return 0;
  pthread_condattr_t attributes;
  pthread_condattr_init(&attributes);
  pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
  pthread_cond_init(&changed, &attributes);
  pthread_condattr_destroy(&attributes);
  pthread_t thread;
  if (pthread_create(&thread, 0, watch, 0) != 0) return 1;
  pthread_detach(thread);
  started = 1;
  return 0;
}

static void disarm(sqlite3 *db) {
  pthread_mutex_lock(&mutex);
  for (Armed **link = &armed; *link != 0; link = &(*link)->next) {
    if ((*link)->db == db) {
      Armed *gone = *link;
      *link = gone->next;
      free(gone);
      break;
    }
  }
  pthread_mutex_unlock(&mutex);
}

/* 0, or an error message. `now` is monotonicNs() as the caller read it. */
static const char *arm(sqlite3 *db, long long now, long long atNs) {
  const char *error = 0;
  pthread_mutex_lock(&mutex);
  Armed *a = armed;
  while (a != 0 && a->db != db) a = a->next;
  if (startWatching() != 0) {
    error = "fenec_deadline: no thread to watch the deadline could be started";
  } else if (a == 0 && (a = malloc(sizeof *a)) == 0) {
    error = "fenec_deadline: out of memory";
  } else {
    if (a->db != db) {
      a->db = db;
      a->next = armed;
      armed = a;
    }
    a->atNs = atNs;
    lastArmedNs = now;
    if (sleeping) pthread_cond_signal(&changed);
  }
  pthread_mutex_unlock(&mutex);
  return error;
}

static void deadlineFunction(sqlite3_context *pCtx, int nArg, sqlite3_value **apArg) {
  (void)nArg;
  const int type = sqlite3_value_type(apArg[0]);
  if (type != SQLITE_INTEGER && type != SQLITE_FLOAT) {
    sqlite3_result_error(pCtx, "fenec_deadline takes a number of milliseconds (0: none)", -1);
    return;
  }
  sqlite3 *db = sqlite3_context_db_handle(pCtx);
  const double ms = sqlite3_value_double(apArg[0]);
  if (ms <= 0) {
    disarm(db);
  } else {
    const long long now = monotonicNs();
    const char *error = arm(db, now, now + (long long)(ms * 1e6));
    if (error != 0) sqlite3_result_error(pCtx, error, -1);
  }
}

/* The function's destructor, called as its connection closes. */
static void disarmClosed(void *db) {
  disarm((sqlite3 *)db);
}

/*
 * How long a statement waits in all for a lock another connection holds: 5 s (PRAGMA busy_timeout's, set
 * before the extension is loaded) unless the connection says otherwise with fenec_busy_timeout(ms)
 * (fenec-server --busy-timeout). The busy handler's own, one for each connection, freed as it closes.
 */
typedef struct Waiting {
  sqlite3 *db;
  int timeoutMs;
} Waiting;

#define BUSY_TIMEOUT_MS 5000

/*
 * The busy handler: 1 to wait and try the lock again, 0 to give up (the statement fails SQLITE_BUSY).
 * SQLite's own waits (sqliteDefaultBusyCallback), each slept in slices of the watcher's tick and cut
 * short by an interrupt.
 */
static int waitUnlessInterrupted(void *arg, int count) {
  static const int delays[] = { 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100 };
  static const int nDelay = (int)(sizeof delays / sizeof delays[0]);
  const Waiting *waiting = (const Waiting *)arg;
  sqlite3 *db = waiting->db;
  int waited = 0;
  for (int i = 0; i < count; i++) waited += i < nDelay ? delays[i] : delays[nDelay - 1];
  int delay = count < nDelay ? delays[count] : delays[nDelay - 1];
  if (waited + delay > waiting->timeoutMs) delay = waiting->timeoutMs - waited;
  if (delay <= 0) return 0;
  const int slice = (int)(TICK_NS / 1000000LL);
  for (int slept = 0; slept < delay; slept += slice) {
    if (sqlite3_is_interrupted(db)) return 0;
    sqlite3_sleep(delay - slept < slice ? delay - slept : slice);
  }
  return !sqlite3_is_interrupted(db);
}

static void busyTimeoutFunction(sqlite3_context *pCtx, int nArg, sqlite3_value **apArg) {
  (void)nArg;
  const int type = sqlite3_value_type(apArg[0]);
  const double ms = type == SQLITE_INTEGER || type == SQLITE_FLOAT ? sqlite3_value_double(apArg[0]) : -1;
  if (!(ms >= 0 && ms <= 2147483647.0)) {
    sqlite3_result_error(pCtx, "fenec_busy_timeout takes a number of milliseconds from 0 (no wait) up", -1);
    return;
  }
  ((Waiting *)sqlite3_user_data(pCtx))->timeoutMs = (int)ms;
  sqlite3_result_int(pCtx, (int)ms);
}

int fenecRegisterDeadline(sqlite3 *db) {
  Waiting *waiting = sqlite3_malloc(sizeof *waiting);
  if (waiting == 0) return SQLITE_NOMEM;
  waiting->db = db;
  waiting->timeoutMs = BUSY_TIMEOUT_MS;
  // The function owns the handler's state: SQLite frees it as the connection closes (or at once if it fails).
  int rc = sqlite3_create_function_v2(db, "fenec_busy_timeout", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, waiting, busyTimeoutFunction, 0, 0, sqlite3_free);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_busy_handler(db, waitUnlessInterrupted, waiting);
  if (rc != SQLITE_OK) return rc;
  return sqlite3_create_function_v2(db, "fenec_deadline", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, db, deadlineFunction, 0, 0, disarmClosed);
}
