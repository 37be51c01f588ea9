# -DAUXSTORE_SANITIZE=address,undefined or =thread instruments everything we
# build from C/C++ (CUDA sources are left alone: nvcc does not take these flags).
if(AUXSTORE_SANITIZE)
  if(AUXSTORE_SANITIZE MATCHES "thread" AND AUXSTORE_SANITIZE MATCHES "address")
    message(FATAL_ERROR "AUXSTORE_SANITIZE: thread cannot be combined with address")
  endif()
  set(_san_flags "-fsanitize=${AUXSTORE_SANITIZE}" -fno-omit-frame-pointer)
  if(AUXSTORE_SANITIZE MATCHES "undefined")
    list(APPEND _san_flags -fno-sanitize-recover=undefined)
  endif()
  foreach(_flag IN LISTS _san_flags)
    add_compile_options("$<$<COMPILE_LANGUAGE:CXX,C>:${_flag}>")
  endforeach()
  add_link_options("-fsanitize=${AUXSTORE_SANITIZE}")
  # A sanitized build is a check, not a measurement: -O1 (the sanitizers' own
  # advice) and line tables only, which still name file and line in every
  # report. Compiling with -O2 -g under ASan+UBSan took 2 to 2.6 times as
  # long per file (store/db_store_read.cc: 111 s against 43 s), enough to
  # push .ci/run past CI's limit.
  foreach(_lang C CXX)
    set(CMAKE_${_lang}_FLAGS_RELWITHDEBINFO "-O1 -g1 -DNDEBUG")
  endforeach()
  message(STATUS "auxstore: sanitizers ${AUXSTORE_SANITIZE}")
endif()
