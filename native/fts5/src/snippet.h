#ifndef FENEC_SNIPPET_H
#define FENEC_SNIPPET_H

#include <sqlite3ext.h>

/* Registers fenec_snippet (snippet.c) on `db`, with the connection's fts5_api. */
int fenecRegisterSnippet(sqlite3 *db, fts5_api *pApi);

#endif
