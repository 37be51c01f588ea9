# ctest: installs the build into a temp prefix, builds tests/capi/consumer
# against that installed tree only, and runs its programs.
#   cmake -DBUILD_DIR=... -DCONSUMER_DIR=... -DWORK_DIR=... -DGENERATOR=... -P package_test.cmake
foreach(var BUILD_DIR CONSUMER_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "package_test: -D${var}=... is required")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package_test: failed (${rc}): ${ARGN}")
  endif()
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")

foreach(f include/auxstore/c.h include/auxstore/store.h)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "package_test: ${f} was not installed")
  endif()
endforeach()
file(GLOB_RECURSE pc_files "${prefix}/*/auxstore.pc")
file(GLOB_RECURSE config_files "${prefix}/*/auxstoreConfig.cmake")
if(NOT pc_files OR NOT config_files)
  message(FATAL_ERROR "package_test: no auxstore.pc or auxstoreConfig.cmake under ${prefix}")
endif()
if(EXISTS "${BUILD_DIR}/tools/auxstore" AND NOT EXISTS "${prefix}/bin/auxstore")
  message(FATAL_ERROR "package_test: the auxstore CLI was built but not installed")
endif()

# Only the installed tree is on the search path, never the build tree.
run(${CMAKE_COMMAND} -S "${CONSUMER_DIR}" -B "${WORK_DIR}/consumer" -G "${GENERATOR}"
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
run(${CMAKE_COMMAND} --build "${WORK_DIR}/consumer" -j2)
foreach(exe c_consumer cpp_consumer c_consumer_pkgconfig)
  run("${WORK_DIR}/consumer/${exe}" "${WORK_DIR}/store-${exe}")
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
message("package_test: installed package builds and runs from C, C++ and pkg-config")
