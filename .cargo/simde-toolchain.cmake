# Used by the QuickJS/WAMR build of deno_core's `v8x` backend: its CMake script fetches `simde`
# from GitHub with FetchContent, which this machine cannot reach. When Debian's `libsimde-dev` is
# installed, point FetchContent at it instead. With internet access and no package, this is a no-op.
if(EXISTS "/usr/include/simde")
  set(FETCHCONTENT_SOURCE_DIR_SIMDE "/usr/include" CACHE PATH "simde from libsimde-dev" FORCE)
endif()
