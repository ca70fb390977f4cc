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
# The optimisation level of the C++ packages' own code: empty gives the
# release levels (-O3 for kernels, -O2 for the Python bindings); the sanitizer
# subset that CI runs builds with -O0, which compiles faster than a release
# build even with the sanitizers' instrumentation.
set(FLAMBEAU_OPTIMIZE "" CACHE STRING "Optimisation flag for flambeau's C++ code (empty: -O3 kernels, -O2 bindings)")
if(FLAMBEAU_OPTIMIZE)
  set(FLAMBEAU_KERNEL_OPTIMIZE ${FLAMBEAU_OPTIMIZE})
  set(FLAMBEAU_BINDING_FLAGS -Wall -Wextra ${FLAMBEAU_OPTIMIZE})
else()
  set(FLAMBEAU_KERNEL_OPTIMIZE -O3)
  set(FLAMBEAU_BINDING_FLAGS -Wall -Wextra -O2)
endif()
# Sanitizers (`nox -s sanitize`): -DFLAMBEAU_SANITIZE=address,undefined builds
# every target of the package with them. Python itself is not instrumented, so
# the runtime is preloaded (LD_PRELOAD=libasan.so) when the tests run.
set(FLAMBEAU_SANITIZE "" CACHE STRING "Sanitizers to build with, as for -fsanitize= (empty: none)")
# FLAMBEAU_SANITIZE_DEBUG_INFO=OFF leaves out -g: CI's sanitized subset builds
# about twice as fast, and reports still name the functions (frame pointers).
option(FLAMBEAU_SANITIZE_DEBUG_INFO "Build sanitized code with debug information (-g)" ON)
if(FLAMBEAU_SANITIZE)
  add_compile_options(-fsanitize=${FLAMBEAU_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  if(FLAMBEAU_SANITIZE_DEBUG_INFO)
    add_compile_options(-g)
  endif()
  add_link_options(-fsanitize=${FLAMBEAU_SANITIZE})
endif()
