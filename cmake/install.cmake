# `cmake --install build --prefix P`: Weft's libraries (static, or shared with BUILD_SHARED_LIBS),
# its public headers and the `weft` binary, a CMake package (find_package(Weft) gives Weft::weft
# and one Weft::weft_<layer> per library) and weft.pc for pkg-config. The package also finds the
# libraries' dependencies. Public headers are those a user may include: not tests or test
# helpers, not a layer's internal/ folder, not the cli, and none that includes gRPC (the rpc
# transport is reached through the factories of headers that do not).
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

# Every library a user's program may link, from the top layer down (pkg-config's link order).
set(WEFT_INSTALLED_LIBRARIES
    weft_train weft_checkpoint weft_distribute weft_distributed_rpc weft_grpc_proto
    weft_distributed weft_collective_transport weft_runtime weft_graph weft_kernels weft_device
    weft_ops weft_framework weft_proto weft_data weft_io weft_core)

if(BUILD_SHARED_LIBS)
  # The installed `weft` finds the installed libraries, and each library its siblings, where they
  # were installed (a program's RUNPATH does not serve the libraries it loads).
  set_target_properties(weft PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  set_target_properties(${WEFT_INSTALLED_LIBRARIES} PROPERTIES INSTALL_RPATH "$ORIGIN")
endif()

# Weft::weft: everything above, for programs that train models locally or on a cluster.
add_library(weft_package INTERFACE)
set_target_properties(weft_package PROPERTIES EXPORT_NAME weft)
target_link_libraries(weft_package INTERFACE weft_train weft_distributed_rpc)
add_library(Weft::weft ALIAS weft_package)

install(TARGETS ${WEFT_INSTALLED_LIBRARIES} weft_package EXPORT WeftTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS weft RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
file(GLOB_RECURSE weft_headers CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}/src
     ${PROJECT_SOURCE_DIR}/src/weft/*.h)
# Headers that reach gRPC, directly or through another Weft header, stay private.
set(weft_private_headers)
foreach(header IN LISTS weft_headers)
  file(STRINGS ${PROJECT_SOURCE_DIR}/src/${header} grpc_includes
       REGEX "^#include [<\"](grpc|weft/.*\\.grpc\\.pb\\.h)")
  if(grpc_includes)
    list(APPEND weft_private_headers ${header})
  endif()
endforeach()
set(weft_growing TRUE)
while(weft_growing)
  set(weft_growing FALSE)
  foreach(header IN LISTS weft_headers)
    if(header IN_LIST weft_private_headers)
      continue()
    endif()
    file(STRINGS ${PROJECT_SOURCE_DIR}/src/${header} includes REGEX "^#include \"weft/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
      if(included IN_LIST weft_private_headers)
        list(APPEND weft_private_headers ${header})
        set(weft_growing TRUE)
        break()
      endif()
    endforeach()
  endforeach()
endwhile()
foreach(header IN LISTS weft_headers)
  if(header MATCHES "(_test\\.h$|test_util|/testing/|/internal/|^weft/cli/)" OR
     header IN_LIST weft_private_headers)
    continue()
  endif()
  get_filename_component(header_dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/src/${header}
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${header_dir})
endforeach()
install(DIRECTORY ${PROJECT_BINARY_DIR}/proto/weft DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.pb.h" PATTERN "*.grpc.pb.h" EXCLUDE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/proto/weft DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.proto")

set(WEFT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Weft)
install(EXPORT WeftTargets NAMESPACE Weft:: DESTINATION ${WEFT_CMAKE_DIR})
configure_package_config_file(cmake/WeftConfig.cmake.in ${PROJECT_BINARY_DIR}/WeftConfig.cmake
                              INSTALL_DESTINATION ${WEFT_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/WeftConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/WeftConfig.cmake ${PROJECT_BINARY_DIR}/WeftConfigVersion.cmake
        DESTINATION ${WEFT_CMAKE_DIR})

# weft.pc: -l flags in link order, then what those static libraries need. Its prefix is found
# relative to the file itself (libdir/pkgconfig/..), so the installed tree can be moved.
set(WEFT_PKGCONFIG_PREFIX "\${pcfiledir}/..")
string(REPLACE "/" ";" libdir_parts "${CMAKE_INSTALL_LIBDIR}")
foreach(part IN LISTS libdir_parts)
  string(APPEND WEFT_PKGCONFIG_PREFIX "/..")
endforeach()
list(TRANSFORM WEFT_INSTALLED_LIBRARIES PREPEND "-l" OUTPUT_VARIABLE WEFT_PKGCONFIG_LIBS)
list(JOIN WEFT_PKGCONFIG_LIBS " " WEFT_PKGCONFIG_LIBS)
configure_file(cmake/weft.pc.in ${PROJECT_BINARY_DIR}/weft.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/weft.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
