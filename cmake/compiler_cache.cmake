# Compiles through ccache where it is installed (Debian: ccache), so that a build folder made
# afresh (a clean clone, another configuration of the same sources) takes the objects an earlier
# build compiled instead of compiling them again. A launcher the user set is left alone.
#
# The settings travel with the launcher, so they hold whoever runs the build:
# - CCACHE_BASEDIR: paths under the source folder are hashed relative to it, so that two clones
#   of the same commit share objects.
# - CCACHE_INODECACHE: hashes of unchanged headers are remembered between compiles.
# - CCACHE_MAXSIZE: four configurations of the library and the tests fit in KILN_CCACHE_MAXSIZE.
option(KILN_USE_CCACHE "Compile through ccache where it is installed" ON)
set(KILN_CCACHE_MAXSIZE 20G CACHE STRING "The most ccache keeps (its max_size)")

if(KILN_USE_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER AND NOT CMAKE_C_COMPILER_LAUNCHER)
  find_program(KILN_CCACHE_PROGRAM ccache)
  if(KILN_CCACHE_PROGRAM)
    set(_kiln_launcher ${CMAKE_COMMAND} -E env
        CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_INODECACHE=true
        CCACHE_MAXSIZE=${KILN_CCACHE_MAXSIZE} ${KILN_CCACHE_PROGRAM})
    set(CMAKE_C_COMPILER_LAUNCHER ${_kiln_launcher})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${_kiln_launcher})
    message(STATUS "kiln: compiling through ${KILN_CCACHE_PROGRAM}")
  endif()
endif()
