# librados (Debian: librados-dev + libradospp-dev) for the RADOS shared tier.
# Ceph ships neither a pkg-config file nor a CMake config for it, so the header
# and library are found by name. Defines the imported target Rados::rados and
# AUXSTORE_HAVE_RADOS (ON when both were found); scripts/setup.sh installs
# the packages, so CI always builds the tier.
if(TARGET Rados::rados)
  return()
endif()
find_path(RADOS_INCLUDE_DIR rados/librados.hpp)
find_library(RADOS_LIBRARY rados)
if(RADOS_INCLUDE_DIR AND RADOS_LIBRARY)
  add_library(Rados::rados UNKNOWN IMPORTED)
  set_target_properties(Rados::rados PROPERTIES
    IMPORTED_LOCATION "${RADOS_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${RADOS_INCLUDE_DIR}")
  set(AUXSTORE_HAVE_RADOS ON)
  message(STATUS "librados: ${RADOS_LIBRARY} (the RADOS shared tier is built)")
else()
  set(AUXSTORE_HAVE_RADOS OFF)
  message(STATUS "librados not found: the RADOS shared tier is not built "
                 "(scripts/setup.sh installs librados-dev and libradospp-dev)")
endif()
