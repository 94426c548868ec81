// Whole files in and out, with errors that name the path.
#pragma once

#include <filesystem>
#include <string>

#include "util/result.h"

namespace xm {

Result<std::string> read_file(const std::filesystem::path& path);
// Creates the parent directories; replaces the file.
Status write_file(const std::filesystem::path& path, const std::string& text);

}  // namespace xm
