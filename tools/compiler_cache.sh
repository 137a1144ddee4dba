# Sourced by the build scripts (from the checkout's root): sets `launcher` to the CMake arguments
# that put ccache in front of the compilers when it is installed. The cache is keyed on paths
# relative to the checkout and not on the build folder, so a fresh clone elsewhere (CI runs one on
# the machine that built the change) and a second build folder reuse what was compiled here.
# Precompiled headers are off then: a cache hit saves far more than they do, and they would make
# every source depend on one large binary file.
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-24G}"
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
            -DWEFT_PRECOMPILED_HEADERS=OFF)
fi
