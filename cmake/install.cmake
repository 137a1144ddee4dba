# `cmake --install build --prefix P`: Weft's libraries, headers and the `weft` binary, a CMake
# package (find_package(Weft) gives Weft::weft and one Weft::weft_<layer> per library) and weft.pc
# for pkg-config. The libraries are static, so the package also finds their dependencies.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

# Every library a user's program may link, from the top layer down (pkg-config's link order).
set(WEFT_INSTALLED_LIBRARIES
    weft_train weft_checkpoint weft_distribute weft_distributed_rpc weft_grpc_proto
    weft_distributed weft_collective_transport weft_runtime weft_graph weft_kernels weft_device
    weft_ops weft_framework weft_proto weft_data weft_io weft_core)

# Weft::weft: everything above, for programs that train models locally or on a cluster.
add_library(weft_package INTERFACE)
set_target_properties(weft_package PROPERTIES EXPORT_NAME weft)
target_link_libraries(weft_package INTERFACE weft_train weft_distributed_rpc)
add_library(Weft::weft ALIAS weft_package)

install(TARGETS ${WEFT_INSTALLED_LIBRARIES} weft_package EXPORT WeftTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS weft RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/weft DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h"
        PATTERN "*_test.h" EXCLUDE PATTERN "*test_util*" EXCLUDE PATTERN "testing" EXCLUDE
        PATTERN "cli" EXCLUDE)
install(DIRECTORY ${PROJECT_BINARY_DIR}/proto/weft DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.pb.h")
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
