/*
 * fenec_snippet(words, tokenizer, open, close, ellipsis, tokens, text [, text …]): what FTS5's
 * snippet(fts, column, open, close, ellipsis, tokens) returns for a row whose column holds `text` —
 * or with several texts, snippet(fts, -1, …) for a row whose columns hold them, in order: the best
 * passage of any — matched by a query that is the OR of `words` (separated by '\n'; each an FTS5
 * string, a phrase of the tokens the tokenizer makes of it), without an FTS5 cursor on the row.
 *
 * snippet() takes the phrases' places in the row from the index (xInst), which needs the row's position
 * lists: FTS5 has them for the rows of its cursor only, so the `match` that asked for snippets had to
 * rank through FTS5's own sorter (`ORDER BY rank`: a statement prepared and every match sorted, each
 * query) and snip on that cursor. Found here by tokenizing the text once with the table's tokenizer and
 * comparing tokens, the places are the same — the index holds what the same tokenizer made of the same
 * text — and a `match` can take its top rows by SQLite's own sorter and snip those rows after the join
 * (docs/performance.md). For text matched by an OR of phrases, as fenecdb's `match` queries are
 * (node/search/text-query.ts): no NEAR, no NOT, no prefix, no column filter inside.
 *
 * `tokenizer` is the table's `tokenize=` option ("porter unicode61 remove_diacritics 2"). The
 * selection of the passage, and the marking, are FTS5's (sqlite3.c: fts5SnippetFunction,
 * fts5SnippetScore, fts5SentenceFinderCb, fts5HighlightCb, fts5CInstIter; public domain), over the
 * places found here, with two changes that keep its answer and not its cost: a passage is scored over
 * the places inside it, found by a binary search, where fts5SnippetScore reads every place of the row
 * for each (14 s for a row of 150 000 words a third of them the word searched); and the sentence
 * before a place is found by moving forward from the last place's, where FTS5 counts from the first
 * sentence each time (places × sentences). Tests compare the two, byte for byte, over texts of every
 * length and shape.
 */
#include <string.h>
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3

#include "snippet.h"

typedef struct Snipper Snipper;

/* Tokens as a tokenizer gives them: their bytes in one buffer, and where each lies in its text. */
typedef struct Tokens {
  int n, nAlloc;
  int *aOff;   /* token i's bytes: zBuf + aOff[i], aLen[i] long */
  int *aLen;
  int *aStart; /* its byte offsets in the text */
  int *aEnd;
  char *zBuf;
  int nBuf, nBufAlloc;
  /* Sentence starts (fts5SentenceFinderCb), kept for a text only. */
  const char *zText;
  int *aFirst;
  int nFirst, nFirstAlloc;
} Tokens;

/* The query: its phrases, each a run of tokens of `tokens`. */
typedef struct Query {
  Tokens tokens;
  int nPhrase;
  int *aPhrase; /* phrase i is tokens aPhrase[i] .. aPhrase[i + 1] - 1 */
} Query;

/* A phrase's place in the text: the instances xInst would list, in its order (position, then phrase). */
typedef struct Inst {
  int iPhrase;
  int iPos;
} Inst;

/*
 * The tokenizer named by the last `tokenizer` argument, kept for the connection (created once), and
 * room for a row's tokens and places, reused from row to row (a connection runs one statement at a
 * time, and the function finishes with a row before the next).
 */
struct Snipper {
  fts5_api *pApi;
  char *zSpec;
  fts5_tokenizer x;
  Fts5Tokenizer *pTok;
  Tokens text;
  Inst *aInst;
  int nInstAlloc;
  unsigned char *aSeen;
  int nSeenAlloc;
};

static void tokensFree(Tokens *p) {
  sqlite3_free(p->aOff);
  sqlite3_free(p->aLen);
  sqlite3_free(p->aStart);
  sqlite3_free(p->aEnd);
  sqlite3_free(p->zBuf);
  sqlite3_free(p->aFirst);
}

static int grow(void **pa, int *pnAlloc, int nNeed, int nSize) {
  if (nNeed <= *pnAlloc) return SQLITE_OK;
  int nNew = *pnAlloc ? *pnAlloc * 2 : 64;
  while (nNew < nNeed) nNew *= 2;
  void *aNew = sqlite3_realloc64(*pa, (sqlite3_uint64)nNew * nSize);
  if (aNew == 0) return SQLITE_NOMEM;
  *pa = aNew;
  *pnAlloc = nNew;
  return SQLITE_OK;
}

static int addFirst(Tokens *p, int iPos) {
  int rc = grow((void **)&p->aFirst, &p->nFirstAlloc, p->nFirst + 1, sizeof(int));
  if (rc == SQLITE_OK) p->aFirst[p->nFirst++] = iPos;
  return rc;
}

/* Room for one more token in each of the four arrays. */
static int growTokens(Tokens *p) {
  if (p->n < p->nAlloc) return SQLITE_OK;
  int nNew = p->nAlloc ? p->nAlloc * 2 : 64;
  int **aa[4] = {&p->aOff, &p->aLen, &p->aStart, &p->aEnd};
  for (int i = 0; i < 4; i++) {
    int *aNew = sqlite3_realloc64(*aa[i], (sqlite3_uint64)nNew * sizeof(int));
    if (aNew == 0) return SQLITE_NOMEM;
    *aa[i] = aNew;
  }
  p->nAlloc = nNew;
  return SQLITE_OK;
}

static int tokenCb(void *pCtx, int tflags, const char *pToken, int nToken, int iStart, int iEnd) {
  Tokens *p = (Tokens *)pCtx;
  if (tflags & FTS5_TOKEN_COLOCATED) return SQLITE_OK;
  int rc = growTokens(p);
  if (rc == SQLITE_OK) rc = grow((void **)&p->zBuf, &p->nBufAlloc, p->nBuf + nToken + 1, 1);
  if (rc != SQLITE_OK) return rc;
  if (p->zText != 0) {
    /* fts5SentenceFinderCb: a token after white space that follows '.' or ':' starts a sentence. */
    if (p->n > 0) {
      int i;
      char c = 0;
      for (i = iStart - 1; i >= 0; i--) {
        c = p->zText[i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      }
      if (i != iStart - 1 && (c == '.' || c == ':')) rc = addFirst(p, p->n);
    } else {
      rc = addFirst(p, 0);
    }
  }
  if (nToken > 0) memcpy(p->zBuf + p->nBuf, pToken, nToken);
  p->aOff[p->n] = p->nBuf;
  p->aLen[p->n] = nToken;
  p->aStart[p->n] = iStart;
  p->aEnd[p->n] = iEnd;
  p->nBuf += nToken;
  p->n++;
  return rc;
}

static int tokenize(Snipper *s, int flags, const char *z, int n, Tokens *p) {
  return s->x.xTokenize(s->pTok, (void *)p, flags, z, n, tokenCb);
}

/* The connection's tokenizer for `zSpec` ("name arg arg …"), created at its first use. */
static int snipperTokenizer(Snipper *s, const char *zSpec) {
  if (s->pTok != 0 && strcmp(s->zSpec, zSpec) == 0) return SQLITE_OK;
  if (s->pTok != 0) s->x.xDelete(s->pTok);
  s->pTok = 0;
  sqlite3_free(s->zSpec);
  s->zSpec = sqlite3_mprintf("%s", zSpec);
  char *zWords = sqlite3_mprintf("%s", zSpec);
  if (s->zSpec == 0 || zWords == 0) {
    sqlite3_free(zWords);
    return SQLITE_NOMEM;
  }
  const char *azArg[16];
  int nArg = 0;
  /* Split at spaces in place (strtok is not for threads: each worker thread has a connection). */
  for (char *z = zWords; *z != 0 && nArg < 16;) {
    while (*z == ' ') *z++ = 0;
    if (*z == 0) break;
    azArg[nArg++] = z;
    while (*z != 0 && *z != ' ') z++;
  }
  int rc = SQLITE_ERROR;
  void *pUser = 0;
  if (nArg > 0) rc = s->pApi->xFindTokenizer(s->pApi, azArg[0], &pUser, &s->x);
  if (rc == SQLITE_OK) rc = s->x.xCreate(pUser, azArg + 1, nArg - 1, &s->pTok);
  if (rc != SQLITE_OK) s->pTok = 0;
  sqlite3_free(zWords);
  return rc;
}

static void queryFree(void *p) {
  Query *q = (Query *)p;
  tokensFree(&q->tokens);
  sqlite3_free(q->aPhrase);
  sqlite3_free(q);
}

/* The phrases of `zWords` ('\n' between them), each tokenized as FTS5 tokenizes a query's string. */
static int queryOf(Snipper *s, const char *zWords, int nWords, Query **ppQuery) {
  Query *q = sqlite3_malloc(sizeof(Query));
  if (q == 0) return SQLITE_NOMEM;
  memset(q, 0, sizeof(Query));
  int nPhraseAlloc = 0;
  int rc = SQLITE_OK;
  int iWord = 0;
  for (int i = 0; rc == SQLITE_OK && i <= nWords; i++) {
    if (i < nWords && zWords[i] != '\n') continue;
    rc = grow((void **)&q->aPhrase, &nPhraseAlloc, q->nPhrase + 2, sizeof(int));
    if (rc == SQLITE_OK) q->aPhrase[q->nPhrase++] = q->tokens.n;
    if (rc == SQLITE_OK) rc = tokenize(s, FTS5_TOKENIZE_QUERY, zWords + iWord, i - iWord, &q->tokens);
    iWord = i + 1;
  }
  if (rc == SQLITE_OK) rc = grow((void **)&q->aPhrase, &nPhraseAlloc, q->nPhrase + 1, sizeof(int));
  if (rc != SQLITE_OK) {
    queryFree(q);
    return rc;
  }
  q->aPhrase[q->nPhrase] = q->tokens.n;
  *ppQuery = q;
  return SQLITE_OK;
}

static int sameToken(const Tokens *a, int i, const Tokens *b, int j) {
  return a->aLen[i] == b->aLen[j] && memcmp(a->zBuf + a->aOff[i], b->zBuf + b->aOff[j], a->aLen[i]) == 0;
}

/* The places of the query's phrases in `t`, into s->aInst. */
static int instancesOf(Snipper *s, const Query *q, const Tokens *t, int *pnInst) {
  int n = 0;
  for (int iPos = 0; iPos < t->n; iPos++) {
    for (int ip = 0; ip < q->nPhrase; ip++) {
      int iFirst = q->aPhrase[ip];
      int nTok = q->aPhrase[ip + 1] - iFirst;
      if (nTok == 0 || iPos + nTok > t->n) continue;
      int k = 0;
      while (k < nTok && sameToken(&q->tokens, iFirst + k, t, iPos + k)) k++;
      if (k < nTok) continue;
      if (grow((void **)&s->aInst, &s->nInstAlloc, n + 1, sizeof(Inst)) != SQLITE_OK) return SQLITE_NOMEM;
      s->aInst[n].iPhrase = ip;
      s->aInst[n].iPos = iPos;
      n++;
    }
  }
  *pnInst = n;
  return SQLITE_OK;
}

static int phraseSize(const Query *q, int ip) {
  return q->aPhrase[ip + 1] - q->aPhrase[ip];
}

/* fts5SnippetScore: the score of the nToken tokens from iPos, and where a passage around them starts. */
static int snippetScore(const Query *q, const Inst *aInst, int nInst, int nDocsize, unsigned char *aSeen, int iPos, int nToken, int *piPos) {
  int iFirst = -1;
  int nScore = 0;
  int iLast = 0;
  sqlite3_int64 iEnd = (sqlite3_int64)iPos + nToken;
  memset(aSeen, 0, q->nPhrase);
  /* The instances are in position order: those in the window are a run, found by a binary search
   * (FTS5's loop reads every instance for every window, a cost that grows with their square). */
  int lo = 0, hi = nInst;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (aInst[mid].iPos < iPos) lo = mid + 1;
    else hi = mid;
  }
  for (int i = lo; i < nInst && aInst[i].iPos < iEnd; i++) {
    int iOff = aInst[i].iPos;
    nScore += (aSeen[aInst[i].iPhrase] ? 1 : 1000);
    aSeen[aInst[i].iPhrase] = 1;
    if (iFirst < 0) iFirst = iOff;
    iLast = iOff + phraseSize(q, aInst[i].iPhrase);
  }
  if (piPos) {
    sqlite3_int64 iAdj = iFirst - (nToken - (iLast - iFirst)) / 2;
    if ((iAdj + nToken) > nDocsize) iAdj = nDocsize - nToken;
    if (iAdj < 0) iAdj = 0;
    *piPos = (int)iAdj;
  }
  return nScore;
}

/* The coalesced instances (fts5CInstIter): overlapping phrases make one marked run. */
typedef struct Runs {
  const Query *q;
  const Inst *aInst;
  int nInst;
  int iInst;
  int iStart; /* first token of the current run, -1 when none is left */
  int iEnd;
} Runs;

static void runsNext(Runs *p) {
  p->iStart = -1;
  p->iEnd = -1;
  while (p->iInst < p->nInst) {
    int io = p->aInst[p->iInst].iPos;
    int iEnd = io - 1 + phraseSize(p->q, p->aInst[p->iInst].iPhrase);
    if (p->iStart < 0) {
      p->iStart = io;
      p->iEnd = iEnd;
    } else if (io <= p->iEnd) {
      if (iEnd > p->iEnd) p->iEnd = iEnd;
    } else {
      break;
    }
    p->iInst++;
  }
}

/* fts5HighlightCb over the text's tokens, from iRangeStart to iRangeEnd. */
typedef struct Marker {
  const char *zIn;
  const char *zOpen;
  const char *zClose;
  int iRangeStart;
  int iRangeEnd;
  int iOff;
  int bOpen;
  Runs runs;
  sqlite3_str *out;
} Marker;

static void markToken(Marker *p, int iPos, int iStartOff, int iEndOff) {
  if (iPos < p->iRangeStart || iPos > p->iRangeEnd) return;
  if (p->iRangeStart && iPos == p->iRangeStart) p->iOff = iStartOff;
  if (p->bOpen && (iPos <= p->runs.iStart || p->runs.iStart < 0) && iStartOff > p->iOff) {
    sqlite3_str_appendall(p->out, p->zClose);
    p->bOpen = 0;
  }
  if (iPos == p->runs.iStart && p->bOpen == 0) {
    sqlite3_str_append(p->out, p->zIn + p->iOff, iStartOff - p->iOff);
    sqlite3_str_appendall(p->out, p->zOpen);
    p->iOff = iStartOff;
    p->bOpen = 1;
  }
  if (iPos == p->runs.iEnd) {
    if (p->bOpen == 0) {
      sqlite3_str_appendall(p->out, p->zOpen);
      p->bOpen = 1;
    }
    sqlite3_str_append(p->out, p->zIn + p->iOff, iEndOff - p->iOff);
    p->iOff = iEndOff;
    runsNext(&p->runs);
  }
  if (iPos == p->iRangeEnd) {
    if (p->bOpen) {
      if (p->runs.iStart >= 0 && iPos >= p->runs.iStart) {
        sqlite3_str_append(p->out, p->zIn + p->iOff, iEndOff - p->iOff);
        p->iOff = iEndOff;
      }
      sqlite3_str_appendall(p->out, p->zClose);
      p->bOpen = 0;
    }
    sqlite3_str_append(p->out, p->zIn + p->iOff, iEndOff - p->iOff);
    p->iOff = iEndOff;
  }
}

static const char *textOr(sqlite3_value *v, const char *zDefault) {
  const char *z = (const char *)sqlite3_value_text(v);
  return z ? z : zDefault;
}

/* The best passage so far (fts5SnippetFunction's iBestCol, iBestStart, nBestScore). */
typedef struct Best {
  int iCol;
  int iStart;
  int nScore;
} Best;

/* Scores the passages of column iCol, tokenized into s->text with its nInst places in s->aInst, against the best so far. */
static int choose(Snipper *s, const Query *q, int nInst, int iCol, int nToken, Best *best) {
  const Tokens *t = &s->text;
  int rc = grow((void **)&s->aSeen, &s->nSeenAlloc, q->nPhrase + 1, 1);
  if (rc != SQLITE_OK) return rc;
  const Inst *aInst = s->aInst;
  int nDocsize = t->n;
  /* The last sentence start at or before the place: FTS5 looks for it from the first sentence at each
   * place (a cost of places × sentences); the places come in order, so it only moves forward. */
  int jj = 0;
  for (int ii = 0; ii < nInst; ii++) {
    int io = aInst[ii].iPos;
    int iAdj;
    int nScore = snippetScore(q, aInst, nInst, nDocsize, s->aSeen, io, nToken, &iAdj);
    if (nScore > best->nScore) *best = (Best){iCol, iAdj, nScore};
    if (t->nFirst && nDocsize > nToken) {
      while (jj < t->nFirst - 1 && t->aFirst[jj + 1] <= io) jj++;
      if (t->aFirst[jj] < io) {
        nScore = snippetScore(q, aInst, nInst, nDocsize, s->aSeen, t->aFirst[jj], nToken, 0);
        nScore += (t->aFirst[jj] == 0 ? 120 : 100);
        if (nScore > best->nScore) *best = (Best){iCol, t->aFirst[jj], nScore};
      }
    }
  }
  return SQLITE_OK;
}

/*
 * Writes the passage of nToken tokens from iStart of zIn, its phrases marked: zIn tokenized into
 * s->text, its nInst places in s->aInst.
 */
static void mark(Snipper *s, const Query *q, int nInst, const char *zIn, int nIn, int iStart, int nToken, const char *zOpen, const char *zClose, const char *zEllips, sqlite3_str *out) {
  const Tokens *t = &s->text;
  Marker m;
  memset(&m, 0, sizeof(m));
  m.zIn = zIn;
  m.zOpen = zOpen;
  m.zClose = zClose;
  m.out = out;
  m.runs.q = q;
  m.runs.aInst = s->aInst;
  m.runs.nInst = nInst;
  runsNext(&m.runs);
  m.iRangeStart = iStart;
  m.iRangeEnd = iStart + nToken - 1;
  if (iStart > 0) sqlite3_str_appendall(out, zEllips);
  while (m.runs.iStart >= 0 && m.runs.iStart < iStart) runsNext(&m.runs);
  for (int i = 0; i < t->n; i++) markToken(&m, i, t->aStart[i], t->aEnd[i]);
  if (m.bOpen) sqlite3_str_appendall(out, zClose);
  if (m.iRangeEnd >= (t->n - 1)) {
    sqlite3_str_append(out, zIn + m.iOff, nIn - m.iOff);
  } else {
    sqlite3_str_appendall(out, zEllips);
  }
}

/* Tokenizes a column's text into s->text (a null text as the empty one, as FTS5 reads it). */
static int tokenizeText(Snipper *s, const char *zIn, int nIn) {
  Tokens *t = &s->text;
  t->n = 0;
  t->nBuf = 0;
  t->nFirst = 0;
  t->zText = zIn;
  return zIn == 0 ? SQLITE_OK : tokenize(s, FTS5_TOKENIZE_DOCUMENT, zIn, nIn, t);
}

/* The number of arguments before the texts. */
#define SNIPPET_FIXED_ARGS 6

static void snippetFunction(sqlite3_context *pCtx, int nVal, sqlite3_value **apVal) {
  if (nVal <= SNIPPET_FIXED_ARGS) {
    sqlite3_result_error(pCtx, "fenec_snippet: give the words, the tokenizer, the marks, the ellipsis, the tokens, then the texts", -1);
    return;
  }
  Snipper *s = (Snipper *)sqlite3_user_data(pCtx);
  int rc = snipperTokenizer(s, textOr(apVal[1], ""));
  if (rc != SQLITE_OK) {
    sqlite3_result_error(pCtx, "fenec_snippet: no such tokenizer", -1);
    return;
  }
  /* The query's phrases, made once a statement: the words are one bound value for all its rows. */
  Query *q = (Query *)sqlite3_get_auxdata(pCtx, 0);
  if (q == 0) {
    rc = queryOf(s, textOr(apVal[0], ""), sqlite3_value_bytes(apVal[0]), &q);
    if (rc != SQLITE_OK) {
      sqlite3_result_error_code(pCtx, rc);
      return;
    }
    sqlite3_set_auxdata(pCtx, 0, q, queryFree);
    q = (Query *)sqlite3_get_auxdata(pCtx, 0);
    if (q == 0) {
      sqlite3_result_error_nomem(pCtx);
      return;
    }
  }
  const int nToken = sqlite3_value_int(apVal[5]);
  sqlite3_value **apText = apVal + SNIPPET_FIXED_ARGS;
  const int nCol = nVal - SNIPPET_FIXED_ARGS;
  /* fts5SnippetFunction over every column given: the best passage of any, the first column on ties. */
  Best best = {0, 0, 0};
  int iTokenized = -1;
  int nInst = 0;
  for (int i = 0; rc == SQLITE_OK && i < nCol; i++) {
    rc = tokenizeText(s, (const char *)sqlite3_value_text(apText[i]), sqlite3_value_bytes(apText[i]));
    if (rc == SQLITE_OK) rc = instancesOf(s, q, &s->text, &nInst);
    if (rc == SQLITE_OK) rc = choose(s, q, nInst, i, nToken, &best);
    iTokenized = i;
  }
  const char *zIn = (const char *)sqlite3_value_text(apText[best.iCol]);
  const int nIn = sqlite3_value_bytes(apText[best.iCol]);
  if (rc == SQLITE_OK && zIn == 0) return; /* null, as snippet() answers for a null value */
  if (rc == SQLITE_OK && iTokenized != best.iCol) {
    rc = tokenizeText(s, zIn, nIn);
    if (rc == SQLITE_OK) rc = instancesOf(s, q, &s->text, &nInst);
  }
  sqlite3_str *out = sqlite3_str_new(0);
  if (rc == SQLITE_OK) mark(s, q, nInst, zIn, nIn, best.iStart, nToken, textOr(apVal[2], ""), textOr(apVal[3], ""), textOr(apVal[4], ""), out);
  if (rc == SQLITE_OK) rc = sqlite3_str_errcode(out);
  int n = sqlite3_str_length(out);
  char *z = sqlite3_str_finish(out);
  if (rc == SQLITE_OK) {
    sqlite3_result_text(pCtx, z ? z : "", z ? n : 0, sqlite3_free);
  } else {
    sqlite3_free(z);
    sqlite3_result_error_code(pCtx, rc);
  }
}

static void snipperFree(void *p) {
  Snipper *s = (Snipper *)p;
  if (s->pTok != 0) s->x.xDelete(s->pTok);
  tokensFree(&s->text);
  sqlite3_free(s->aInst);
  sqlite3_free(s->aSeen);
  sqlite3_free(s->zSpec);
  sqlite3_free(s);
}

int fenecRegisterSnippet(sqlite3 *db, fts5_api *pApi) {
  Snipper *s = sqlite3_malloc(sizeof(Snipper));
  if (s == 0) return SQLITE_NOMEM;
  memset(s, 0, sizeof(Snipper));
  s->pApi = pApi;
  /* Not SQLITE_DETERMINISTIC over its arguments alone: the tokenizer named is the connection's. */
  return sqlite3_create_function_v2(db, "fenec_snippet", -1, SQLITE_UTF8 | SQLITE_INNOCUOUS, s, snippetFunction, 0, 0, snipperFree);
}
