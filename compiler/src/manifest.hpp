// manifest.hpp: NAME.json, the machine-readable account of a compile: the robot and problem it
// was compiled from, the layout of the arguments, the operations, the stack and its forms, the
// derivatives' columns and structural zeros, and the batch forms (nelu check and the Python
// package read it).
#pragma once

#include <string>
#include <vector>

#include "emit.hpp"
#include "layout.hpp"

namespace nelu::emit {

/// The manifest of the entry points laid out in `layouts` (NAME, then NAME_derivatives) and, with
/// --batch, of their batch forms laid out in `batch_layouts`.
std::string manifest(const EmitInput& in, const std::vector<Layout>& layouts, const std::vector<Layout>& batch_layouts);

/// The spec's file name ("" without a spec): outputs must not depend on where the sources are
/// checked out.
std::string spec_name(const EmitInput& in);

}  // namespace nelu::emit
