# ctest api_consumer_package: install the build tree into a scratch prefix, configure the
# consumer project against it with find_package(gamut), build it, run it.
#   cmake -DGAMUT_BUILD=... -DCONSUMER=... -DWORK=... -DCXX=... -DGENERATOR=... -P run.cmake
file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
macro(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
endmacro()
step(${CMAKE_COMMAND} --install ${GAMUT_BUILD} --prefix ${prefix} --component library)
if(NOT EXISTS ${prefix}/include/gamut/gamut.h)
  message(FATAL_ERROR "the install has no include/gamut/gamut.h")
endif()
step(${CMAKE_COMMAND} -S ${CONSUMER} -B ${WORK}/build -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX}
     -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
step(${CMAKE_COMMAND} --build ${WORK}/build)
# The consumer finds libgamut.so through the RUNPATH CMake gives build-tree executables.
step(${WORK}/build/consumer)
message(STATUS "${out}")
