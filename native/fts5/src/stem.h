#ifndef FENEC_STEM_H
#define FENEC_STEM_H

#include <sqlite3ext.h>

/* Registers the tokenizer fenec_stem (stem.c) with the connection's fts5_api. */
int fenecRegisterStem(fts5_api *pApi);

#endif
