# fenec_faiss: our N-API addon over Faiss's static library. Built by build.sh (make install).
# FENEC_FAISS_LIB / FENEC_FAISS_INCLUDE point elsewhere than Debian's libfaiss-dev when set.
{
  "targets": [
    {
      "target_name": "fenec_faiss",
      "sources": [
        "src/addon.cc",
        "src/add-worker.cc",
        "src/args.cc",
        "src/envelope.cc",
        "src/errors.cc",
        "src/faiss-index.cc",
        "src/hnsw-add.cc",
        "src/index-shape.cc",
        "src/memory.cc",
        "src/search.cc",
        "src/threads.cc"
      ],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "<!(echo ${FENEC_FAISS_INCLUDE:-/usr/include})"
      ],
      "defines": [
        "NAPI_VERSION=8",
        "NODE_ADDON_API_CPP_EXCEPTIONS",
        "NODE_ADDON_API_CPP_EXCEPTIONS_ALL",
        # A worker thread terminated at a statement's time limit in the middle of a call (loading an
        # index snapshot) makes N-API refuse to throw; without this the refused throw became a C++
        # exception out of a noexcept callback: std::terminate, the whole node down. With it the error
        # is dropped: the thread it was for is ending (test: faiss.test.ts, "ended in the middle").
        "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS",
        "NODE_ADDON_API_DISABLE_DEPRECATED"
      ],
      # Faiss reports errors by C++ exceptions and casts search parameters with dynamic_cast:
      # without -fexceptions nothing can be caught, and without -frtti a filtered search segfaults.
      "cflags!": ["-fno-exceptions", "-fno-rtti"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-frtti", "-fopenmp", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "libraries": [
        "<!(echo ${FENEC_FAISS_LIB:-/usr/lib/x86_64-linux-gnu/libfaiss.a})",
        "-fopenmp",
        "-lopenblas",
        "-llapack"
      ],
      # Never unloaded: Node unloads an addon when the last worker thread that loaded it ends, but a
      # worker terminated at its time limit leaves its index jobs running on libuv's threads, and
      # OpenMP's team threads (libgomp, loaded with the addon) live on. Unmapping their code under
      # them killed the process (SIGSEGV in a team thread after a worker was replaced).
      "ldflags": ["-fopenmp", "-Wl,-z,nodelete"],
      "xcode_settings": {
        "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
        "GCC_ENABLE_CPP_RTTI": "YES",
        "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
        "OTHER_CPLUSPLUSFLAGS": ["-Xpreprocessor", "-fopenmp"]
      }
    }
  ]
}
