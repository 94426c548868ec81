#include "util/file.h"

#include <fstream>
#include <sstream>

namespace xm {

Result<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path.string() + ": cannot read"};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Status write_file(const std::filesystem::path& path, const std::string& text) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return Error{path.string() + ": cannot write"};
  return Status::Ok();
}

}  // namespace xm
