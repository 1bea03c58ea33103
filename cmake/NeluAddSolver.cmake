# NeluAddSolver.cmake: nelu_add_solver(), which compiles a robot and a problem into a C++ solver at
# build time and adds it to a target (like protobuf_generate for .proto files).
#
# Included by nelu-config.cmake (after find_package(nelu)), and by nelu's own top-level
# CMakeLists.txt, so that it also works in nelu's build tree and in projects that add nelu with
# add_subdirectory() or FetchContent.
#
#   nelu_add_solver(TARGET <target>
#                   URDF <robot.urdf>
#                   PROBLEM <id|fd|hybrid|spec.yaml>
#                   NAME <name>
#                   [FLOATING_BASE]
#                   [BATCH]
#                   [DERIVATIVES]
#                   [SCALAR <double|float|both>]
#                   [MAX_STACK <bytes>]
#                   [OUTPUT_DIR <dir>])
#
# Arguments
#   TARGET         an existing executable or library target (not INTERFACE) that gets the solver.
#   URDF           the robot; a relative path is taken from CMAKE_CURRENT_SOURCE_DIR.
#   PROBLEM        a preset (id, fd, hybrid) or a YAML problem spec file (relative paths from
#                  CMAKE_CURRENT_SOURCE_DIR). See `nelu compile --help`.
#   NAME           the C name of the solver's entry point and of its files; a C identifier.
#   FLOATING_BASE  attach the URDF's root link to the world by a 6-DoF joint (--floating-base).
#   BATCH          also the batch entry points NAME_batch, NAME_f_batch (--batch: n states per call
#                  in the lanes of the target's vector registers, docs/batch.md), in NAME_batch.hpp
#                  and NAME_batch.cpp, which are added to TARGET's sources too.
#   DERIVATIVES    also NAME_derivatives, the outputs and their Jacobian with respect to
#                  [q-tangent, qd, in] (--derivatives, docs/derivatives.md), in NAME.hpp and NAME.cpp
#                  (with BATCH also NAME_derivatives_batch in the batch files).
#   SCALAR         which entry points to generate: NAME (double), NAME_f (float) or both
#                  (nelu's default, both, when omitted).
#   MAX_STACK      stack budget in bytes (--max-stack; nelu's default, 16384, when omitted): a solver
#                  whose estimated stack exceeds it also gets the workspace form NAME_ws / NAME_f_ws,
#                  with NAME_WORK_BYTES in its header (docs/firmware.md); 0 always emits it.
#   OUTPUT_DIR     where the files go; default ${CMAKE_CURRENT_BINARY_DIR}/nelu_generated
#                  (relative paths from CMAKE_CURRENT_BINARY_DIR). Solvers may share a directory.
#
# Outputs
#   OUTPUT_DIR/NAME.hpp, OUTPUT_DIR/NAME.cpp, OUTPUT_DIR/NAME.json (with BATCH also
#   OUTPUT_DIR/NAME_batch.hpp and OUTPUT_DIR/NAME_batch.cpp), made by a custom command that
#   runs `nelu compile` at build time and reruns whenever the URDF, the spec file or the nelu
#   executable changes. NAME.cpp and NAME.hpp (and the batch files) are added to TARGET's sources;
#   OUTPUT_DIR is added to TARGET's PUBLIC include directories (build interface only) and nelu::runtime, which carries
#   nelu's runtime include directory ("nelu/status.h"), is linked PUBLIC. Because the keyword form
#   of target_link_libraries is used, TARGET's other target_link_libraries calls must use keywords
#   (PUBLIC/PRIVATE/INTERFACE) too.
#
# The nelu executable
#   NELU_EXECUTABLE, when set (a path, or the name of an executable target), names the nelu to run,
#   e.g. a host build when cross-compiling. Otherwise the target nelu::nelu is used: the imported
#   executable of an installed package, or the alias of the `nelu` target in nelu's own build tree
#   (with `nelu` itself as a last resort).
#
# Example
#   find_package(nelu REQUIRED)
#   add_executable(controller main.cpp)
#   nelu_add_solver(TARGET controller URDF robots/ur5e.urdf PROBLEM id NAME ur5e_id SCALAR double)
#   # main.cpp: #include "ur5e_id.hpp"  ...  int status = ur5e_id(q, qd, in, out);
include_guard(GLOBAL)

function(nelu_add_solver)
  cmake_parse_arguments(PARSE_ARGV 0 arg "FLOATING_BASE;BATCH;DERIVATIVES" "TARGET;URDF;PROBLEM;NAME;SCALAR;MAX_STACK;OUTPUT_DIR" "")

  # --- check the arguments
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "nelu_add_solver: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  foreach(required TARGET URDF PROBLEM NAME)
    if(NOT arg_${required})
      message(FATAL_ERROR "nelu_add_solver: ${required} is required")
    endif()
  endforeach()
  if(NOT TARGET ${arg_TARGET})
    message(FATAL_ERROR "nelu_add_solver: TARGET ${arg_TARGET} is not a target (create it before this call)")
  endif()
  if(NOT arg_NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "nelu_add_solver: NAME '${arg_NAME}' is not a C identifier")
  endif()
  if(DEFINED arg_MAX_STACK AND NOT arg_MAX_STACK MATCHES "^[0-9]+$")
    message(FATAL_ERROR "nelu_add_solver: MAX_STACK must be a number of bytes, not '${arg_MAX_STACK}'")
  endif()
  if(arg_SCALAR AND NOT arg_SCALAR MATCHES "^(double|float|both)$")
    message(FATAL_ERROR "nelu_add_solver: SCALAR must be double, float or both, not '${arg_SCALAR}'")
  endif()

  # --- inputs, outputs and the nelu to run
  get_filename_component(urdf "${arg_URDF}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  get_filename_component(urdf_name "${urdf}" NAME)
  set(depends "${urdf}")
  if(arg_PROBLEM MATCHES "^(id|fd|hybrid)$")
    set(problem "${arg_PROBLEM}")
  else()
    get_filename_component(problem "${arg_PROBLEM}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND depends "${problem}")
  endif()
  if(arg_OUTPUT_DIR)
    get_filename_component(out "${arg_OUTPUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  else()
    set(out "${CMAKE_CURRENT_BINARY_DIR}/nelu_generated")
  endif()
  set(flags "")
  if(arg_FLOATING_BASE)
    list(APPEND flags --floating-base)
  endif()
  if(arg_BATCH)
    list(APPEND flags --batch)
  endif()
  if(arg_DERIVATIVES)
    list(APPEND flags --derivatives)
  endif()
  if(arg_SCALAR)
    list(APPEND flags --scalar ${arg_SCALAR})
  endif()
  if(DEFINED arg_MAX_STACK)
    list(APPEND flags --max-stack ${arg_MAX_STACK})
  endif()
  if(NELU_EXECUTABLE)
    set(nelu "${NELU_EXECUTABLE}")
  elseif(TARGET nelu::nelu)
    set(nelu nelu::nelu)
  elseif(TARGET nelu)
    set(nelu nelu)
  else()
    message(FATAL_ERROR "nelu_add_solver: no nelu executable: find_package(nelu) first, or set NELU_EXECUTABLE")
  endif()
  if(NOT TARGET nelu::runtime)
    message(FATAL_ERROR "nelu_add_solver: the target nelu::runtime does not exist: find_package(nelu) first")
  endif()
  set(outputs "${out}/${arg_NAME}.hpp" "${out}/${arg_NAME}.cpp" "${out}/${arg_NAME}.json")
  set(sources "${out}/${arg_NAME}.cpp" "${out}/${arg_NAME}.hpp")
  if(arg_BATCH)
    list(APPEND outputs "${out}/${arg_NAME}_batch.hpp" "${out}/${arg_NAME}_batch.cpp")
    list(APPEND sources "${out}/${arg_NAME}_batch.cpp" "${out}/${arg_NAME}_batch.hpp")
  endif()

  # --- the build-time compile, and the target's sources, include path and runtime
  # A target name in COMMAND and DEPENDS stands for its file and makes the target build first.
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${nelu} compile "${urdf}" --problem "${problem}" --name "${arg_NAME}" -o "${out}" ${flags}
    DEPENDS ${depends} ${nelu}
    COMMENT "nelu: compiling ${arg_NAME} (${arg_PROBLEM}) from ${urdf_name}"
    VERBATIM)
  target_sources(${arg_TARGET} PRIVATE ${sources})
  target_include_directories(${arg_TARGET} PUBLIC "$<BUILD_INTERFACE:${out}>")
  target_link_libraries(${arg_TARGET} PUBLIC nelu::runtime)
endfunction()
