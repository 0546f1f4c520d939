# `cmake --install BUILD --prefix P` (docs/embedding.md): the public headers, the static libraries, the `dop` binary
# and libdop_intercept.so under GNUInstallDirs' folders of P, the CMake package `dop` (dopConfig.cmake,
# dopConfigVersion.cmake, targets dop::predictor, dop::runtime, ...) and pkg-config modules (dop-predictor,
# dop-runtime). Included by the top-level CMakeLists.txt after every component.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(DOP_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/dop CACHE STRING "Where the CMake package dop is installed")
mark_as_advanced(DOP_INSTALL_CMAKEDIR)

# The libraries an application may link, in link order. Exported as dop::NAME (dop_runtime -> dop::runtime); the
# analysis tier's, when built, in an export set of their own that the package loads only for the component
# `analysis` (they need LLVM and Clang's CMake packages, which an application of the runtime should not).
set(DOP_RUNTIME_LIBRARIES dop_expr dop_predictor dop_dataset dop_spec dop_runtime dop_synthetic dop_kernels)
set(DOP_ANALYSIS_LIBRARIES "")
foreach(lib dop_features dop_transform dop_trainer)
  if(TARGET ${lib})
    list(APPEND DOP_ANALYSIS_LIBRARIES ${lib})
  endif()
endforeach()
set(DOP_INSTALL_LIBRARIES ${DOP_RUNTIME_LIBRARIES} ${DOP_ANALYSIS_LIBRARIES})

# Header-only and warning-only helpers (nlohmann-json, Eigen, the warning flags) are needed to compile dop, never to
# link against it; a static library's private dependencies are exported as $<LINK_ONLY:...>, so they are kept to
# the build tree here instead of being required from every application's CMake.
set(DOP_BUILD_ONLY_DEPENDENCIES dop_warnings dop_json dop_cli11 Eigen3::Eigen)
# The C++ runtime a C program needs when it links dop's static C++ libraries with the C compiler driver (the C API,
# dop/predictor.h): what the C++ driver adds beyond the C driver (libstdc++ and libm with GCC).
set(DOP_CXX_RUNTIME_LIBRARIES ${CMAKE_CXX_IMPLICIT_LINK_LIBRARIES})
if(CMAKE_C_IMPLICIT_LINK_LIBRARIES)
  list(REMOVE_ITEM DOP_CXX_RUNTIME_LIBRARIES ${CMAKE_C_IMPLICIT_LINK_LIBRARIES})
endif()
list(REMOVE_DUPLICATES DOP_CXX_RUNTIME_LIBRARIES)

foreach(lib ${DOP_INSTALL_LIBRARIES})
  string(REGEX REPLACE "^dop_" "" name ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${name})
  get_target_property(deps ${lib} INTERFACE_LINK_LIBRARIES)
  if(deps)
    foreach(dep ${DOP_BUILD_ONLY_DEPENDENCIES})
      list(TRANSFORM deps REPLACE "^\\$<LINK_ONLY:${dep}>$" "$<LINK_ONLY:$<BUILD_INTERFACE:${dep}>>")
    endforeach()
    set_property(TARGET ${lib} PROPERTY INTERFACE_LINK_LIBRARIES "${deps}")
  endif()
  # Include folders in the source or build tree are the build tree's; installed, the headers are under
  # CMAKE_INSTALL_INCLUDEDIR (install(TARGETS ... INCLUDES DESTINATION) below).
  get_target_property(dirs ${lib} INTERFACE_INCLUDE_DIRECTORIES)
  set(fixed "")
  foreach(dir ${dirs})
    cmake_path(IS_PREFIX PROJECT_SOURCE_DIR "${dir}" in_source)
    cmake_path(IS_PREFIX PROJECT_BINARY_DIR "${dir}" in_build)
    if(in_source OR in_build)
      set(dir "$<BUILD_INTERFACE:${dir}>")
    endif()
    list(APPEND fixed "${dir}")
  endforeach()
  set_property(TARGET ${lib} PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${fixed}")
endforeach()
target_link_libraries(dop_predictor INTERFACE "$<$<LINK_LANGUAGE:C>:${DOP_CXX_RUNTIME_LIBRARIES}>")

# Interface helpers an installed library really needs: OpenCL (with the API version dop's headers are written
# against) for dop::runtime, the XGBoost library for dop::trainer.
set_target_properties(dop_opencl PROPERTIES EXPORT_NAME opencl)
install(TARGETS ${DOP_RUNTIME_LIBRARIES} dop_opencl EXPORT dopTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT dopTargets NAMESPACE dop:: DESTINATION ${DOP_INSTALL_CMAKEDIR} FILE dopTargets.cmake)
if(DOP_ANALYSIS_LIBRARIES)
  set_target_properties(dop_xgboost PROPERTIES EXPORT_NAME xgboost)
  install(TARGETS ${DOP_ANALYSIS_LIBRARIES} dop_xgboost EXPORT dopAnalysisTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT dopAnalysisTargets NAMESPACE dop:: DESTINATION ${DOP_INSTALL_CMAKEDIR}
          FILE dopAnalysisTargets.cmake)
endif()
install(TARGETS dop RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The interposer is preloaded, not linked: it is not part of the exported package.
install(TARGETS dop_intercept LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# `dop exec` finds it relative to its own binary (docs/intercept.md), whatever the lib folder is called
# (lib, lib64, lib/x86_64-linux-gnu).
file(RELATIVE_PATH DOP_INTERCEPT_FROM_BINDIR /prefix/${CMAKE_INSTALL_BINDIR} /prefix/${CMAKE_INSTALL_LIBDIR})
target_compile_definitions(dop PRIVATE DOP_INTERCEPT_FROM_BINDIR="${DOP_INTERCEPT_FROM_BINDIR}")

# Each library's public headers (<folder>/include/dop/*); none includes a private header (src/).
foreach(lib ${DOP_INSTALL_LIBRARIES})
  get_target_property(src ${lib} SOURCE_DIR)
  install(DIRECTORY ${src}/include/dop DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h"
          PATTERN "*.hpp")
endforeach()

# The CMake package.
set(DOP_PACKAGE_HAS_ZLIB ${ZLIB_FOUND})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/dopConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/cmake/dopConfig.cmake INSTALL_DESTINATION ${DOP_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/dopConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/dopConfig.cmake ${PROJECT_BINARY_DIR}/cmake/dopConfigVersion.cmake
        DESTINATION ${DOP_INSTALL_CMAKEDIR})

# pkg-config modules: static libraries, so Libs names everything they need after them (a C program links them
# with the C driver: the C++ runtime too). Relocatable: the prefix is found from the .pc file's own folder, so
# `cmake --install --prefix P` needs no reconfiguration.
file(RELATIVE_PATH DOP_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" DOP_PC_TO_PREFIX "${DOP_PC_TO_PREFIX}")
set(DOP_PC_CXX_RUNTIME "")
foreach(l ${DOP_CXX_RUNTIME_LIBRARIES} ${CMAKE_THREAD_LIBS_INIT})
  if(l MATCHES "^-")
    string(APPEND DOP_PC_CXX_RUNTIME " ${l}")
  else()
    string(APPEND DOP_PC_CXX_RUNTIME " -l${l}")
  endif()
endforeach()
set(DOP_PC_ZLIB "")
if(ZLIB_FOUND)
  set(DOP_PC_ZLIB " -lz")
endif()
foreach(pc dop-predictor dop-runtime)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
