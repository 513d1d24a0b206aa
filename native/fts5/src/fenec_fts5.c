/*
 * fenec_fts5: a SQLite loadable extension with what FTS5 lacks for fenecdb's scores.
 *
 * - fenec_bm25(fts, column [, rows, tokens, n1, ..., nk]): an FTS5 auxiliary function, BM25 as Lucene
 *   (8 and later) and Elasticsearch compute it, lower-better as FTS5 ranks (it returns the score
 *   negated): in a select list, `fenec_bm25(fts, column)`, or as FTS5's rank with `rank MATCH
 *   'fenec_bm25(…)'` (its arguments then read by FTS5):
 *
 *       score = sum over the query's phrases i found in the row of
 *               IDF_i * tf_i / (tf_i + k1 * (1 - b + b * len / avglen)),     k1 = 1.2, b = 0.75
 *       IDF_i = ln(1 + (N - n_i + 0.5) / (n_i + 0.5))
 *
 *   FTS5's own bm25() takes IDF = ln((N - n + 0.5) / (n + 0.5)) and floors it at 1e-6, so that a word
 *   in half the rows or more scores about 1e-6 however often the row holds it: in a collection of
 *   three rows, every score. Lucene's IDF is positive for any word present, and a phrase scores at
 *   most its IDF.
 *
 *   `column` is the index of the FTS5 column a `match FIELD` searches (tf and len count that column
 *   only), or -1 for every column (`match *`: the row's columns as one text).
 *
 *   Without more arguments N, avglen and each n_i are the whole table's, as FTS5 keeps them (N and
 *   the token totals from its averages record, n_i by running the phrase, once per query). With
 *   them, they are the caller's: `rows` (N) and `tokens` (the total length of those rows in `column`,
 *   avglen = tokens / rows) and one n per phrase, counted over the rows a token may read, so that a
 *   score says nothing of rows the reader cannot see. Either all of them or none.
 *
 * - fenec_doclen(sz, column): the length in tokens of one row, from the `sz` blob of an FTS5 table's
 *   `_docsize` shadow table (one varint per column), in `column` or (-1) in all: the summand of
 *   `tokens` above.
 *
 * - fenec_snippet(words, tokenizer, open, close, ellipsis, tokens, text [, text …]), in snippet.c:
 *   FTS5's snippet() without a cursor of the index, for the rows a `match` has chosen.
 *
 * - fenec_deadline(ms), in deadline.c: the time limit a worker holds a request's statements to.
 *
 * - the tokenizer fenec_stem (`fenec_stem english unicode61 …`), in stem.c: Snowball stems over a
 *   parent tokenizer, for `@text` (node/search/tokenizers.ts).
 *
 * All are registered on the connection that loads the extension, and on no other. Nothing in this file
 * is process-global beyond the SQLite API pointer every extension keeps; deadline.c keeps the armed
 * deadlines of every connection, and the thread that watches them, for the whole process.
 */
#include <math.h>
#include <string.h>
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include "deadline.h"
#include "snippet.h"
#include "stem.h"

#define K1 1.2
#define B 0.75

typedef struct Bm25Data {
  int nPhrase;
  double avgdl;
  double *aIDF;  /* per phrase */
  double *aFreq; /* per phrase, for the current row */
} Bm25Data;

static int countCb(const Fts5ExtensionApi *pApi, Fts5Context *pFts, void *pUserData) {
  (void)pApi;
  (void)pFts;
  (*(sqlite3_int64 *)pUserData)++;
  return SQLITE_OK;
}

static double idf(double nRow, double nHit) {
  return log(1.0 + (nRow - nHit + 0.5) / (nHit + 0.5));
}

/* The query's statistics, computed at its first row and kept for the rest (xSetAuxdata). */
static int bm25Data(const Fts5ExtensionApi *pApi, Fts5Context *pFts, int column, int nVal, sqlite3_value **apVal, Bm25Data **ppData, const char **pzErr) {
  Bm25Data *p = (Bm25Data *)pApi->xGetAuxdata(pFts, 0);
  int rc = SQLITE_OK;
  if (p != 0) {
    *ppData = p;
    return SQLITE_OK;
  }
  int nPhrase = pApi->xPhraseCount(pFts);
  int given = nVal > 1;
  if (given && nVal != 3 + nPhrase) {
    *pzErr = "fenec_bm25: give the column alone, or the column, rows, tokens and one count per phrase";
    return SQLITE_ERROR;
  }
  if (column < -1 || column >= pApi->xColumnCount(pFts)) {
    *pzErr = "fenec_bm25: no such column";
    return SQLITE_ERROR;
  }
  sqlite3_int64 nByte = sizeof(Bm25Data) + (sqlite3_int64)nPhrase * 2 * sizeof(double);
  p = (Bm25Data *)sqlite3_malloc64(nByte);
  if (p == 0) return SQLITE_NOMEM;
  memset(p, 0, (size_t)nByte);
  p->nPhrase = nPhrase;
  p->aIDF = (double *)&p[1];
  p->aFreq = &p->aIDF[nPhrase];

  sqlite3_int64 nRow = 0;
  sqlite3_int64 nToken = 0;
  if (given) {
    nRow = sqlite3_value_int64(apVal[1]);
    nToken = sqlite3_value_int64(apVal[2]);
  } else {
    rc = pApi->xRowCount(pFts, &nRow);
    if (rc == SQLITE_OK) rc = pApi->xColumnTotalSize(pFts, column, &nToken);
  }
  /* No rows, or rows without words: a row found is then of average length. */
  p->avgdl = (nRow > 0 && nToken > 0) ? (double)nToken / (double)nRow : 1.0;
  for (int i = 0; rc == SQLITE_OK && i < nPhrase; i++) {
    sqlite3_int64 nHit = 0;
    if (given) {
      nHit = sqlite3_value_int64(apVal[3 + i]);
    } else {
      rc = pApi->xQueryPhrase(pFts, i, (void *)&nHit, countCb);
    }
    p->aIDF[i] = idf((double)nRow, (double)nHit);
  }
  if (rc == SQLITE_OK) rc = pApi->xSetAuxdata(pFts, p, sqlite3_free);
  else sqlite3_free(p);
  *ppData = rc == SQLITE_OK ? p : 0;
  return rc;
}

static void bm25Function(const Fts5ExtensionApi *pApi, Fts5Context *pFts, sqlite3_context *pCtx, int nVal, sqlite3_value **apVal) {
  if (nVal < 1) {
    sqlite3_result_error(pCtx, "fenec_bm25: the column is missing (-1 for every column)", -1);
    return;
  }
  int column = sqlite3_value_int(apVal[0]);
  const char *zErr = 0;
  Bm25Data *pData = 0;
  int rc = bm25Data(pApi, pFts, column, nVal, apVal, &pData, &zErr);
  int nInst = 0;
  if (rc == SQLITE_OK) {
    memset(pData->aFreq, 0, sizeof(double) * pData->nPhrase);
    rc = pApi->xInstCount(pFts, &nInst);
  }
  for (int i = 0; rc == SQLITE_OK && i < nInst; i++) {
    int ip, ic, io;
    rc = pApi->xInst(pFts, i, &ip, &ic, &io);
    if (rc == SQLITE_OK && (column < 0 || ic == column)) pData->aFreq[ip] += 1.0;
  }
  int nTok = 0;
  if (rc == SQLITE_OK) rc = pApi->xColumnSize(pFts, column, &nTok);
  if (rc != SQLITE_OK) {
    if (zErr != 0) sqlite3_result_error(pCtx, zErr, -1);
    else sqlite3_result_error_code(pCtx, rc);
    return;
  }
  double norm = K1 * (1.0 - B + B * (double)nTok / pData->avgdl);
  double score = 0.0;
  for (int i = 0; i < pData->nPhrase; i++) {
    double tf = pData->aFreq[i];
    if (tf > 0.0) score += pData->aIDF[i] * tf / (tf + norm);
  }
  sqlite3_result_double(pCtx, -score);
}

/* SQLite's varint: 7 bits a byte, high bit set on all but the last; a ninth byte gives 8 bits. */
static int getVarint(const unsigned char *p, int n, sqlite3_uint64 *pValue) {
  sqlite3_uint64 v = 0;
  for (int i = 0; i < 9; i++) {
    if (i >= n) return 0;
    if (i == 8) {
      *pValue = (v << 8) | p[i];
      return 9;
    }
    v = (v << 7) | (p[i] & 0x7f);
    if ((p[i] & 0x80) == 0) {
      *pValue = v;
      return i + 1;
    }
  }
  return 0;
}

static void doclenFunction(sqlite3_context *pCtx, int nVal, sqlite3_value **apVal) {
  (void)nVal;
  if (sqlite3_value_type(apVal[0]) != SQLITE_BLOB) {
    sqlite3_result_null(pCtx);
    return;
  }
  const unsigned char *p = (const unsigned char *)sqlite3_value_blob(apVal[0]);
  int n = sqlite3_value_bytes(apVal[0]);
  int column = sqlite3_value_int(apVal[1]);
  sqlite3_int64 total = 0;
  int offset = 0;
  for (int c = 0; offset < n; c++) {
    sqlite3_uint64 v;
    int used = getVarint(p + offset, n - offset, &v);
    if (used == 0) {
      sqlite3_result_error(pCtx, "fenec_doclen: not an FTS5 docsize record", -1);
      return;
    }
    offset += used;
    if (column < 0 || c == column) total += (sqlite3_int64)v;
  }
  sqlite3_result_int64(pCtx, total);
}

/* The fts5_api of this connection, as the FTS5 documentation says to get it. */
static fts5_api *fts5Api(sqlite3 *db) {
  fts5_api *pRet = 0;
  sqlite3_stmt *pStmt = 0;
  if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &pStmt, 0) == SQLITE_OK) {
    sqlite3_bind_pointer(pStmt, 1, (void *)&pRet, "fts5_api_ptr", 0);
    sqlite3_step(pStmt);
  }
  sqlite3_finalize(pStmt);
  return pRet;
}

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_fenecfts_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  SQLITE_EXTENSION_INIT2(pApi);
  fts5_api *fts5 = fts5Api(db);
  if (fts5 == 0 || fts5->iVersion < 2) {
    *pzErrMsg = sqlite3_mprintf("fenec_fts5: this SQLite has no FTS5 (version 2 or later)");
    return SQLITE_ERROR;
  }
  int rc = fts5->xCreateFunction(fts5, "fenec_bm25", 0, bm25Function, 0);
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function(db, "fenec_doclen", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, 0, doclenFunction, 0, 0);
  }
  if (rc == SQLITE_OK) rc = fenecRegisterSnippet(db, fts5);
  if (rc == SQLITE_OK) rc = fenecRegisterDeadline(db);
  if (rc == SQLITE_OK) rc = fenecRegisterStem(fts5);
  return rc;
}
