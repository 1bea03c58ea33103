// io.cpp: see io.hpp.
#include "io.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <system_error>

#include <unistd.h>

#include "diagnostics.hpp"

namespace nelu {

void write_file_atomic(const std::string& path, const std::string& content) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw InputError(path + ": cannot write the file (" + std::error_code(errno, std::generic_category()).message() + ")");
        out << content;
        out.flush();
        if (!out) {
            std::remove(tmp.c_str());
            throw InputError(path + ": error while writing the file");
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw InputError(path + ": cannot write the file (rename failed)");
    }
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open the file");
    std::stringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw InputError(path + ": cannot read the file");
    return ss.str();
}

}  // namespace nelu
