# Build settings shared by every flambeau C++ package (one ABI domain: same
# standard, same flags). Core includes this file from its source tree; the
# dependents get it through core's installed CMake config (find_package).
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()
# ccache when present: the edit loop and repeated wheel builds on 2 cores.
find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()
set(FLAMBEAU_BINDING_FLAGS -Wall -Wextra -O2)
# Sanitizers (`nox -s sanitize`): -DFLAMBEAU_SANITIZE=address,undefined builds
# every target of the package with them. Python itself is not instrumented, so
# the runtime is preloaded (LD_PRELOAD=libasan.so) when the tests run.
set(FLAMBEAU_SANITIZE "" CACHE STRING "Sanitizers to build with, as for -fsanitize= (empty: none)")
if(FLAMBEAU_SANITIZE)
  add_compile_options(-fsanitize=${FLAMBEAU_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=${FLAMBEAU_SANITIZE})
endif()
