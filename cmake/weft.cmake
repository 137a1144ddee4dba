# Helpers shared by every layer: weft_library(), weft_test(), weft_bench().

# weft_precompile(NAME KIND): a target of at least three sources parses the common third-party
# headers (cmake/pch/) from one precompiled header shared by every target of its KIND ("library"
# or "test", with Eigen's Tensor module where a directory sets WEFT_PCH_EIGEN: kernels/). With
# clang a source then compiles 10-30% faster; sharing matters, since one precompiled header costs
# as much as a few sources. All targets share the global flags, which a precompiled header must
# match.
function(weft_precompile name kind)
  get_target_property(sources ${name} SOURCES)
  list(LENGTH sources count)
  if(NOT WEFT_PRECOMPILED_HEADERS OR count LESS 3)
    return()
  endif()
  set(headers ${PROJECT_SOURCE_DIR}/cmake/pch/common.h)
  set(donor weft_pch_${kind})
  if(WEFT_PCH_EIGEN)
    list(APPEND headers ${PROJECT_SOURCE_DIR}/cmake/pch/eigen.h)
    string(APPEND donor _eigen)
  endif()
  if(kind STREQUAL "test")
    list(APPEND headers ${PROJECT_SOURCE_DIR}/cmake/pch/test.h)
  endif()
  if(NOT TARGET ${donor})
    add_library(${donor} OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch/empty.cc)
    target_compile_options(${donor} PRIVATE ${WEFT_WARNINGS})
    target_link_libraries(${donor} PRIVATE protobuf::libprotobuf)
    if(WEFT_PCH_EIGEN)
      target_link_libraries(${donor} PRIVATE Eigen3::Eigen)
    endif()
    if(kind STREQUAL "test")
      target_link_libraries(${donor} PRIVATE GTest::gmock)
      weft_test_compile_options(${donor})
    endif()
    target_precompile_headers(${donor} PRIVATE ${headers})
  endif()
  target_precompile_headers(${name} REUSE_FROM ${donor})
endfunction()

# weft_test_compile_options(NAME): under a sanitizer a test's own code, glue around the libraries,
# is built unoptimised: tests are half of a sanitizer build's compile time, -O0 compiles them about
# 40% faster, and the suite still runs in minutes (the libraries stay at -O1).
function(weft_test_compile_options name)
  if(WEFT_SANITIZE OR WEFT_TSAN)
    target_compile_options(${name} PRIVATE -O0)
  endif()
endfunction()

# weft_library(NAME [STATIC] SOURCES ... DEPS ...): one layer or sub-library with Weft's
# warnings; shared with BUILD_SHARED_LIBS unless STATIC (libraries private to one binary). No
# <target>_EXPORTS define, so a source compiles to the same command line in a static and a shared
# build and the compiler cache serves both.
function(weft_library name)
  cmake_parse_arguments(ARG "STATIC" "" "SOURCES;DEPS" ${ARGN})
  if(ARG_STATIC)
    add_library(${name} STATIC ${ARG_SOURCES})
  else()
    add_library(${name} ${ARG_SOURCES})
  endif()
  set_target_properties(${name} PROPERTIES DEFINE_SYMBOL "")
  weft_precompile(${name} library)
  target_include_directories(${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
                                            $<INSTALL_INTERFACE:include>)
  target_compile_options(${name} PRIVATE ${WEFT_WARNINGS})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# weft_test(NAME SOURCES ... DEPS ... [TIMEOUT s] [SANITIZED_SUBSET filter]): a GoogleTest binary
# registered with ctest. SANITIZED_SUBSET (a --gtest_filter pattern) is what runs of it under the
# sanitizers, for binaries whose cases each start several processes: every process runs 5-15 times
# slower there, so a subset that takes each code path once (start, a collective across processes,
# a worker killed, hung and restarted) runs, and the optimised suite runs every case.
function(weft_test name)
  if(NOT WEFT_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "TIMEOUT;SANITIZED_SUBSET" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  weft_test_compile_options(${name})
  weft_precompile(${name} test)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_compile_options(${name} PRIVATE ${WEFT_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  add_test(NAME ${name} COMMAND ${name})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  # OpenBLAS reads its kernel choice at load time; see src/weft/cli/blas_environment.h.
  set(environment "OPENBLAS_CORETYPE=${WEFT_OPENBLAS_CORETYPE}")
  if(ARG_SANITIZED_SUBSET AND (WEFT_SANITIZE OR WEFT_TSAN))
    list(APPEND environment "GTEST_FILTER=${ARG_SANITIZED_SUBSET}")
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "${environment}")
endfunction()

# weft_bench(NAME SOURCES ... DEPS ...): a Google Benchmark program under build/bench.
function(weft_bench name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
  target_compile_options(${name} PRIVATE ${WEFT_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark)
endfunction()
