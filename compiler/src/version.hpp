// version.hpp: the tool version, named in every generated file's banner.
#pragma once

#define NELU_VERSION "0.1.0"
