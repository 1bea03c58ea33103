// io.cpp: see io.hpp.
#include "io.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <unistd.h>

#include "diagnostics.hpp"

namespace nelu {

namespace {

std::string temporary_path(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

/// `content` to the temporary file of `path`; throws InputError naming `path` (and removes the
/// temporary file) when it cannot be written.
void write_temporary(const std::string& path, const std::string& content) {
    const std::string tmp = temporary_path(path);
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path + ": cannot write the file (" + std::error_code(errno, std::generic_category()).message() + ")");
    out << content;
    out.flush();
    if (!out) {
        out.close();
        std::remove(tmp.c_str());
        throw InputError(path + ": error while writing the file");
    }
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& content) { write_files_atomic({{path, content}}); }

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
    std::size_t written = 0;
    try {
        for (; written < files.size(); ++written) write_temporary(files[written].first, files[written].second);
    } catch (...) {
        for (std::size_t k = 0; k < written; ++k) std::remove(temporary_path(files[k].first).c_str());
        throw;
    }
    for (std::size_t k = 0; k < files.size(); ++k) {
        const std::string& path = files[k].first;
        if (std::rename(temporary_path(path).c_str(), path.c_str()) == 0) continue;
        const std::string why = std::error_code(errno, std::generic_category()).message();
        for (std::size_t j = k; j < files.size(); ++j) std::remove(temporary_path(files[j].first).c_str());
        for (std::size_t j = 0; j < k; ++j) std::remove(files[j].first.c_str());
        throw InputError(path + ": cannot write the file (" + why + ")" +
                         (k > 0 ? "; the files written before it in this run were removed" : std::string()));
    }
}

std::string read_file(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a directory, not a file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open the file");
    std::stringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw InputError(path + ": cannot read the file");
    return ss.str();
}

std::string xml_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            default: out += c;
        }
    }
    return out;
}

}  // namespace nelu
