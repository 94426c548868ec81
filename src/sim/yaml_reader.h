// Reading the YAML files people write (scenarios, training jobs): every error names the
// file, line, column and field and says what was expected; unknown and repeated keys are
// errors. A failed check throws YamlError, which the file's parser turns into its Error.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <string_view>
#include <initializer_list>
#include <string>

#include "util/result.h"

namespace xm::sim {

struct YamlError {
  std::string text;
};

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& field, const std::string& message) const;
  // Refuses keys outside `known` (and any key twice).
  void keys(const YAML::Node& map, const std::string& path, std::initializer_list<const char*> known) const;
  static std::string join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

  double number(const YAML::Node& n, const std::string& field, double lo, double hi) const;
  uint64_t whole(const YAML::Node& n, const std::string& field, uint64_t lo, uint64_t hi) const;
  bool boolean(const YAML::Node& n, const std::string& field) const;
  // Bytes as a whole number or with nccl-tests' suffixes: "64K", "16M", "1G" (powers of 2).
  uint64_t size(const YAML::Node& n, const std::string& field, uint64_t lo, uint64_t hi) const;
  std::string text(const YAML::Node& n, const std::string& field) const;

 private:
  std::string source_;
};

// Parses `text` (from `source`) and hands its root to `read`: a syntax error, or a failed
// check of the Reader's, becomes the returned error.
Status read_yaml(std::string_view text, const std::string& source,
                 const std::function<void(const Reader&, const YAML::Node& root)>& read);

// `path` as written in a file in `dir`: relative to that file.
std::string resolve_path(const std::string& dir, const std::string& path);

}  // namespace xm::sim
