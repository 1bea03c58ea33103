// check.hpp: `nelu check`: build a generated solver with the system's C++ compiler, load it, and
// compare it with the reference algorithms on many states, in double and float.
#pragma once

#include <string>

namespace nelu {

struct CheckOptions {
    std::string urdf;      ///< the robot the solver was generated from
    std::string manifest;  ///< DIR/NAME.json; NAME.cpp and NAME.hpp sit beside it
    std::string problem;   ///< the problem spec, when the solver came from one (default: the
                           ///< manifest's spec name, looked up beside the manifest)
    int states = 1000;     ///< random states (special configurations are added)
    std::string cxx = "c++";
};

struct CheckReport {
    std::string name;
    int states = 0;
    bool seeks_qdd = false;
    double forward_double = 0, forward_float = 0;    ///< max relative forward error
    double backward_double = 0, backward_float = 0;  ///< max scaled residual (when accelerations are sought)
    int failed_status = 0;                           ///< states where the solver returned non-zero
    double decisive_double() const { return seeks_qdd ? backward_double : forward_double; }
    double decisive_float() const { return seeks_qdd ? backward_float : forward_float; }
};

/// Build, load and compare. Throws InputError for unreadable inputs and std::runtime_error when the
/// solver cannot be built or loaded.
CheckReport run_check(const CheckOptions& options);

}  // namespace nelu
