# Copies impulse's public headers into DST with the installed include paths:
# "host/batch/x.h" becomes <impulse/batch/x.h>, "solvers/x.h" <impulse/solvers/x.h>
# (and io/, kernels/), in the files and in their #include lines. A header's copy is
# rewritten only when it changes, so an unchanged header rebuilds nothing.
#   cmake -DSRC=<source root> -DDST=<dir> -DROOMS="solvers;io;kernels;host/batch;..." -DSTAMP=<file> -P stage_headers.cmake
cmake_minimum_required(VERSION 3.22)
set(staged "")
foreach(room IN LISTS ROOMS)
  file(GLOB headers "${SRC}/${room}/*.h")
  string(REGEX REPLACE "^host/" "" public_room "${room}")
  foreach(h IN LISTS headers)
    get_filename_component(name "${h}" NAME)
    file(READ "${h}" text)
    # every project include names a room; the ones that are not public fail the
    # header check (a public header may include only public headers)
    string(REGEX REPLACE "#include \"host/([a-z_]+)/([^\"]+)\"" "#include <impulse/\\1/\\2>" text "${text}")
    string(REGEX REPLACE "#include \"(solvers|io|kernels)/([^\"]+)\"" "#include <impulse/\\1/\\2>" text "${text}")
    set(out "${DST}/impulse/${public_room}/${name}")
    set(old "")
    if(EXISTS "${out}")
      file(READ "${out}" old)
    endif()
    if(NOT old STREQUAL text)
      file(WRITE "${out}" "${text}")
    endif()
    list(APPEND staged "impulse/${public_room}/${name}")
  endforeach()
endforeach()
# a header removed from the tree leaves the staged copy too
file(GLOB_RECURSE present RELATIVE "${DST}" "${DST}/impulse/*.h")
foreach(p IN LISTS present)
  if(NOT p IN_LIST staged)
    file(REMOVE "${DST}/${p}")
  endif()
endforeach()
file(WRITE "${STAMP}" "")
