/*
 * The FTS5 tokenizer `fenec_stem LANGUAGE PARENT [PARENT's arguments …]`: PARENT's tokens (for fenecdb,
 * `unicode61 remove_diacritics 2`: case folded, accents removed), each replaced by its Snowball stem in
 * LANGUAGE (libstemmer: "english" is the Porter2 algorithm).
 *
 * Why not FTS5's own `porter`: it is Porter's 1980 algorithm, whose steps disagree with each other on
 * common words — "deploys" is `deploi` and "deployment" is `deploy`, so neither finds the other. Porter2
 * fixed these ("y" after a vowel stays: both are `deploy`). Modelled on FTS5's porter tokenizer
 * (sqlite3.c: fts5PorterCreate, fts5PorterTokenize; public domain), which wraps its parent the same way.
 *
 * A token longer than STEM_MAX_TOKEN bytes is passed on unstemmed, as FTS5's porter does (no English
 * word is that long; the cost stays linear in the text).
 */
#include <libstemmer.h>
#include <string.h>
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3

#include "stem.h"

#define STEM_MAX_TOKEN 64

typedef struct Stemmer {
  fts5_tokenizer parent;
  Fts5Tokenizer *pParent;
  struct sb_stemmer *pStemmer;
} Stemmer;

typedef struct StemContext {
  Stemmer *p;
  void *pCtx;
  int (*xToken)(void *, int, const char *, int, int, int);
} StemContext;

static void stemDelete(Fts5Tokenizer *pTok) {
  Stemmer *p = (Stemmer *)pTok;
  if (p == 0) return;
  if (p->pParent) p->parent.xDelete(p->pParent);
  if (p->pStemmer) sb_stemmer_delete(p->pStemmer);
  sqlite3_free(p);
}

/* azArg: the language, then the parent tokenizer's name and its arguments. */
static int stemCreate(void *pUser, const char **azArg, int nArg, Fts5Tokenizer **ppOut) {
  fts5_api *pApi = (fts5_api *)pUser;
  *ppOut = 0;
  if (nArg < 2) return SQLITE_ERROR;
  Stemmer *p = sqlite3_malloc(sizeof(Stemmer));
  if (p == 0) return SQLITE_NOMEM;
  memset(p, 0, sizeof(Stemmer));
  p->pStemmer = sb_stemmer_new(azArg[0], "UTF_8");
  if (p->pStemmer == 0) {
    stemDelete((Fts5Tokenizer *)p);
    return SQLITE_ERROR;
  }
  void *pParentUser = 0;
  int rc = pApi->xFindTokenizer(pApi, azArg[1], &pParentUser, &p->parent);
  if (rc == SQLITE_OK) rc = p->parent.xCreate(pParentUser, azArg + 2, nArg - 2, &p->pParent);
  if (rc != SQLITE_OK) {
    stemDelete((Fts5Tokenizer *)p);
    return rc;
  }
  *ppOut = (Fts5Tokenizer *)p;
  return SQLITE_OK;
}

static int stemToken(void *pCtx, int tflags, const char *pToken, int nToken, int iStart, int iEnd) {
  StemContext *c = (StemContext *)pCtx;
  if (nToken > STEM_MAX_TOKEN) return c->xToken(c->pCtx, tflags, pToken, nToken, iStart, iEnd);
  const sb_symbol *stem = sb_stemmer_stem(c->p->pStemmer, (const sb_symbol *)pToken, nToken);
  if (stem == 0) return SQLITE_NOMEM;
  return c->xToken(c->pCtx, tflags, (const char *)stem, sb_stemmer_length(c->p->pStemmer), iStart, iEnd);
}

static int stemTokenize(Fts5Tokenizer *pTok, void *pCtx, int flags, const char *pText, int nText,
                        int (*xToken)(void *, int, const char *, int, int, int)) {
  Stemmer *p = (Stemmer *)pTok;
  StemContext c = {p, pCtx, xToken};
  return p->parent.xTokenize(p->pParent, (void *)&c, flags, pText, nText, stemToken);
}

int fenecRegisterStem(fts5_api *pApi) {
  fts5_tokenizer tokenizer = {stemCreate, stemDelete, stemTokenize};
  return pApi->xCreateTokenizer(pApi, "fenec_stem", (void *)pApi, &tokenizer, 0);
}
