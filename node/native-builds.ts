/**
 * Where our two native builds are: the Faiss addon (native/faiss, loaded by node/vector/faiss.ts) and the SQLite
 * extension (native/fts5, loaded by node/storage/sqlite.ts). One finder for both, as better-sqlite3's
 * lib/binding.js finds its one: a path given by the operator (FENEC_FAISS_ADDON, FENEC_FTS5_EXTENSION, read by
 * the CLIs and handed here once at start), else the build under the repository root.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FenecError } from '../shared/errors.js';

export type NativeBuildName = 'faiss' | 'fts5';

/** Paths that replace the repository's builds, by name; a name left out is looked for in the repository. */
export type NativeBuildPaths = Readonly<Partial<Record<NativeBuildName, string>>>;

interface NativeBuild {
  /** From the repository root. */
  readonly file: string;
  /** The variable an operator sets to load another build. */
  readonly variable: string;
  readonly what: string;
  readonly code: 'vector_engine' | 'cannot_open';
  readonly hint: string;
}

const BUILDS: Readonly<Record<NativeBuildName, NativeBuild>> = {
  faiss: {
    file: 'native/faiss/build/Release/fenec_faiss.node',
    variable: 'FENEC_FAISS_ADDON',
    what: 'the Faiss addon',
    code: 'vector_engine',
    hint: 'run `make install`: it builds the addon, and installs libfaiss-dev first when run as root on Debian',
  },
  fts5: {
    file: 'native/fts5/build/fenec_fts5.so',
    variable: 'FENEC_FTS5_EXTENSION',
    what: 'the SQLite extension fenecdb scores text with',
    code: 'cannot_open',
    hint: 'run `make install`: it builds native/fts5',
  },
};

let given: NativeBuildPaths = {};

/** The operator's paths, from the variables the CLIs read (FENEC_FAISS_ADDON, FENEC_FTS5_EXTENSION). */
export function nativeBuildPaths(env: Readonly<Record<string, string | undefined>>): NativeBuildPaths {
  const paths: Partial<Record<NativeBuildName, string>> = {};
  for (const name of Object.keys(BUILDS) as NativeBuildName[]) {
    const value = env[BUILDS[name].variable];
    if (value !== undefined && value !== '') paths[name] = value;
  }
  return paths;
}

/** Sets this thread's paths, once at start (a program's CLI, a worker thread from its setup). */
export function useNativeBuilds(paths: NativeBuildPaths): void {
  given = { ...paths };
}

/** The paths in use, to hand to a worker thread, which has its own module state. */
export function nativeBuildsInUse(): NativeBuildPaths {
  return given;
}

/** The build's path: the operator's when given, else the repository's (this file runs from dist/node/ or node/). */
export function findNativeBuild(name: NativeBuildName): string {
  const build = BUILDS[name];
  const override = given[name];
  if (override !== undefined) {
    if (existsSync(override)) return override;
    throw new FenecError(build.code, `${build.what} is not at ${override} (${build.variable})`, {
      hint: `set ${build.variable} to the path of a built ${build.file.split('/').pop()}, or unset it to use ${build.file}`,
    });
  }
  const candidates = ['../../', '../'].map((up) => fileURLToPath(new URL(up + build.file, import.meta.url)));
  const path = candidates.find((p) => existsSync(p));
  if (path === undefined) {
    throw new FenecError(build.code, `${build.what} is not built (${build.file} is missing)`, {
      hint: `${build.hint}; or set ${build.variable} to where one is`,
    });
  }
  return path;
}
