# install rules and package config (cmake --install): headers, the libraries,
# the `auxstore` CLI when it is built, a CMake package (find_package(auxstore)
# -> auxstore::auxstore, auxstore::c, ...) and a pkg-config file for the C ABI.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(AUXSTORE_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/auxstore")

# The umbrella for C++ users. (The name `auxstore` belongs to the CLI.)
add_library(auxstore_all INTERFACE)
add_library(auxstore::auxstore ALIAS auxstore_all)
target_link_libraries(auxstore_all INTERFACE auxstore::format auxstore::store auxstore::gpu
  auxstore::pipeline)

# Exported as auxstore::<name>. auxstore_warnings is linked PRIVATE by every
# static library, so their link interface names it: it is exported too, as
# auxstore::warnings, and never carries flags to a consumer (link-only).
set(_auxstore_exported
  auxstore_format format
  auxstore_store store
  auxstore_rocks rocks
  auxstore_gpu gpu
  auxstore_pipeline pipeline
  auxstore_gpu_common gpu_common
  auxstore_c c
  auxstore_all auxstore
  auxstore_warnings warnings)
if(TARGET auxstore_gpu_cuda)
  list(APPEND _auxstore_exported auxstore_gpu_cuda gpu_cuda)
endif()
if(TARGET auxstore_rados)  # the RADOS shared tier (librados found)
  list(APPEND _auxstore_exported auxstore_rados rados)
endif()
if(TARGET auxstore_shared)
  list(APPEND _auxstore_exported auxstore_shared shared)
endif()
set(_auxstore_targets "")
while(_auxstore_exported)
  list(POP_FRONT _auxstore_exported _target _name)
  set_target_properties(${_target} PROPERTIES EXPORT_NAME ${_name})
  list(APPEND _auxstore_targets ${_target})
endwhile()

install(TARGETS ${_auxstore_targets}
  EXPORT auxstoreTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/auxstore
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
if(TARGET auxstore)  # the CLI (tools/)
  install(TARGETS auxstore RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(EXPORT auxstoreTargets
  NAMESPACE auxstore::
  FILE auxstoreTargets.cmake
  DESTINATION ${AUXSTORE_INSTALL_CMAKEDIR})
# The config finds librados again the way the build did (Rados::rados).
install(FILES ${PROJECT_SOURCE_DIR}/cmake/AuxstoreRados.cmake
  DESTINATION ${AUXSTORE_INSTALL_CMAKEDIR})
if(TARGET auxstore_rados)
  set(AUXSTORE_HAVE_RADOS ON)
else()
  set(AUXSTORE_HAVE_RADOS OFF)
endif()
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/auxstoreConfig.cmake.in
  ${PROJECT_BINARY_DIR}/auxstoreConfig.cmake
  INSTALL_DESTINATION ${AUXSTORE_INSTALL_CMAKEDIR})
# 0.x: a minor release may break compatibility.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/auxstoreConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/auxstoreConfig.cmake
  ${PROJECT_BINARY_DIR}/auxstoreConfigVersion.cmake
  DESTINATION ${AUXSTORE_INSTALL_CMAKEDIR})

# pkg-config, relocatable: paths are relative to the .pc file's directory, so
# `cmake --install --prefix <anywhere>` gives a working file.
set(_auxstore_pcdir "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
file(RELATIVE_PATH AUXSTORE_PC_TO_PREFIX "/prefix/${_auxstore_pcdir}" "/prefix")
string(REGEX REPLACE "/$" "" AUXSTORE_PC_TO_PREFIX "${AUXSTORE_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/auxstore.pc.in ${PROJECT_BINARY_DIR}/auxstore.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/auxstore.pc DESTINATION ${_auxstore_pcdir})
