# Warnings every auxstore target compiles with.
add_library(auxstore_warnings INTERFACE)
target_compile_options(auxstore_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wshadow=local -Wno-missing-field-initializers>)
