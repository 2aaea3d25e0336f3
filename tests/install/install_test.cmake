# The install-and-consume test (ctest: install_consume): installs the current build into a fresh
# prefix, builds tests/install/consumer against it with find_package(Anvil), compiles zoo:dqn with
# the installed `anvil` and runs the consumer on it; then compiles zoo:dqn again with the consumer's
# own compile_model (linking the installed static libraries) and runs that too.
#
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DC_COMPILER=... -DCXX_COMPILER=...
#         -DSANITIZE=ON|OFF [-DPYTHON=/usr/bin/python3] -P install_test.cmake
#
# With PYTHON, the installed Python package loads and runs that dqn.so too.
#
# The consumer is built with the compilers of the build it tests and, for a sanitizer build, with
# the same sanitizer flags, linked by the C++ driver (see CMakeLists.txt's run_model note).
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR C_COMPILER CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_test.cmake: -D${var}=... is required")
  endif()
endforeach()

# Runs a command; fails the test with its output unless it exits 0. The output lands in `out_var`.
function(run_step what out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${ARGN}\n--- stdout\n${out}\n--- stderr\n${err}")
  endif()
  message(STATUS "${what}: ok")
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

run_step("cmake --install" out ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f bin/anvil include/anvil/runtime/c_model_api.h include/anvil/runtime/model.h
          include/anvil/graph/graph.h)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the installed tree lacks ${f}")
  endif()
endforeach()
file(GLOB_RECURSE config ${prefix}/*/AnvilConfig.cmake)
file(GLOB_RECURSE runtime_lib ${prefix}/*/libanvil_runtime.so)
file(GLOB_RECURSE static_libs ${prefix}/*/libanvil.a ${prefix}/*/libanvil_onnx.a)
list(LENGTH static_libs num_static)
if(NOT config OR NOT runtime_lib OR NOT num_static EQUAL 2)
  message(FATAL_ERROR "the installed tree lacks AnvilConfig.cmake, libanvil_runtime.so, libanvil.a "
                      "or libanvil_onnx.a: '${config}' '${runtime_lib}' '${static_libs}'")
endif()
if(EXISTS ${prefix}/include/anvil/frontend/onnx/importer_internal.h)
  message(FATAL_ERROR "importer_internal.h (ONNX's generated classes) must not be installed")
endif()

set(consumer_args -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix}
    -DANVIL_EXAMPLE=${SOURCE_DIR}/examples/c/run_model.c
    -DCONSUMER_WITH_COMPILER=ON -DCMAKE_C_COMPILER=${C_COMPILER}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
if(SANITIZE)
  set(flags "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer")
  list(APPEND consumer_args -DCMAKE_C_FLAGS=${flags} -DCMAKE_CXX_FLAGS=${flags}
       -DCMAKE_EXE_LINKER_FLAGS=${flags} -DCONSUMER_LINK_WITH_CXX=ON)
endif()
run_step("configure the consumer" out ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer
         -B ${consumer_build} ${consumer_args})
run_step("build the consumer" out ${CMAKE_COMMAND} --build ${consumer_build})

run_step("installed anvil compile zoo:dqn" out ${prefix}/bin/anvil compile zoo:dqn --target llvm
         -o ${WORK_DIR}/dqn.so)
run_step("consumer dqn.so" out ${consumer_build}/consumer ${WORK_DIR}/dqn.so)
# zoo:dqn has one output, 18 Q-values; on inputs of ones they are finite numbers.
if(NOT out MATCHES "^q_values \\[1, 18\\] sum -?[0-9]")
  message(FATAL_ERROR "the consumer printed\n${out}\nexpected 'q_values [1, 18] sum S first ...'")
endif()
message(STATUS "consumer: ${out}")

# The compiler library, linked by a consumer: its model.so runs in the C consumer as well.
run_step("compile_model zoo:dqn" compiled
         ${consumer_build}/compile_model zoo:dqn ${WORK_DIR}/dqn2.so)
run_step("consumer dqn2.so" out2 ${consumer_build}/consumer ${WORK_DIR}/dqn2.so)
if(NOT out2 STREQUAL out)
  message(FATAL_ERROR "the consumer printed\n${out2}\nfor compile_model's dqn2.so, and\n${out}\n"
                      "for the installed anvil's dqn.so: the same model, the same compiler")
endif()

# The installed Python package runs the installed anvil's dqn.so to the same Q-values' shape.
# (Not under the sanitizers: there the interpreter needs their runtime preloaded.)
if(PYTHON AND NOT SANITIZE)
  file(GLOB package ${prefix}/lib*/python*/*-packages/anvil/__init__.py)
  if(NOT package)
    message(FATAL_ERROR "the installed tree lacks the Python package (anvil/__init__.py)")
  endif()
  get_filename_component(package_dir ${package} DIRECTORY)
  get_filename_component(site ${package_dir} DIRECTORY)
  # Lines, not ';': a semicolon would split the argument into a CMake list.
  string(CONCAT script "import anvil, numpy as np\nm = anvil.load('${WORK_DIR}/dqn.so')\n"
         "q, = m.run(np.ones((1, 4, 84, 84), np.float32))\nprint(anvil.__file__, q.shape)")
  run_step("installed Python package" py ${CMAKE_COMMAND} -E env PYTHONPATH=${site}
           ${PYTHON} -P -c "${script}")
  if(NOT py MATCHES "^${prefix}/.*anvil/__init__.py \\(1, 18\\)")
    message(FATAL_ERROR "the installed package printed '${py}'")
  endif()
endif()

# A missing model.so: the consumer reports the runtime's error and exits 1.
execute_process(COMMAND ${consumer_build}/consumer ${WORK_DIR}/missing.so RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "missing.so")
  message(FATAL_ERROR "consumer on a missing model.so: exit ${rc}, stderr '${err}'")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
