// NAME_derivatives under AddressSanitizer and UndefinedBehaviorSanitizer: in the sanitizer build
// (NELU_SANITIZE, where test_derivatives, labelled slow, does not run) nelu check builds the
// generated UR5e id, fd and wrist F/T (square sensor) derivative solvers with
// -fsanitize=address,undefined -fno-sanitize-recover=all (at -O0: GCC with -O1 and the sanitizers
// is several times slower on long straight-line functions) and loads them into the sanitized nelu,
// so an out-of-bounds access or undefined behaviour in the emitted code or in check's harness
// aborts the test. Built and registered in the sanitizer build only (tests/CMakeLists.txt); the
// release build checks the same solvers in test_derivatives.
#include <doctest/doctest.h>

#include <string>

#include "test_support.hpp"

TEST_CASE("derivatives under the sanitizers: UR5e id, fd and a square sensor problem, the generated code sanitized too") {
    const std::string cxx = nelu::test::cxx_with(std::string(nelu::test::kSanitizedCodeFlags) + " -fno-omit-frame-pointer");
    const std::string check = "--cxx '" + cxx + "'";
    const std::string src = nelu::test::source_dir();
    const std::string ur5e = src + "/robots/ur5e.urdf";
    nelu::test::compile_and_check(ur5e, "id", "ur5e_id_dsan", "--derivatives", check);
    nelu::test::compile_and_check(ur5e, "fd", "ur5e_fd_dsan", "--derivatives", check);
    nelu::test::compile_and_check(ur5e, src + "/robots/specs/ur5e_wrist_ft.yaml", "ur5e_ft_dsan", "--derivatives", check);
}
