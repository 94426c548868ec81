#include "sim/yaml_reader.h"

#include <filesystem>
#include <set>
#include <sstream>

namespace xm::sim {
namespace {

std::string trim(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

}  // namespace

void Reader::fail(const YAML::Node& at, const std::string& field, const std::string& message) const {
  const YAML::Mark m = at.Mark();
  std::string where = source_;
  if (!m.is_null()) where += ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  throw YamlError{where + ": " + (field.empty() ? "" : field + ": ") + message};
}

void Reader::keys(const YAML::Node& map, const std::string& path, std::initializer_list<const char*> known) const {
  if (!map.IsMap()) fail(map, path, "expected a mapping");
  std::set<std::string> allowed(known.begin(), known.end()), seen;
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    if (!allowed.count(key)) {
      std::string list;
      for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      fail(kv.first, join(path, key), "unknown field; expected one of: " + list);
    }
    if (!seen.insert(key).second) fail(kv.first, join(path, key), "given twice");
  }
}

namespace {

// The scalar as a T, or the Reader's error saying what was expected and what came.
template <typename T>
T scalar_as(const Reader& r, const YAML::Node& n, const std::string& field, const char* expected) {
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    r.fail(n, field, std::string("expected ") + expected + ", got \"" +
                         (n.IsScalar() ? n.Scalar() : std::string("a list or mapping")) + "\"");
  }
}

}  // namespace

double Reader::number(const YAML::Node& n, const std::string& field, double lo, double hi) const {
  const double v = scalar_as<double>(*this, n, field, "a number");
  if (!(v >= lo && v <= hi)) fail(n, field, "must be in [" + trim(lo) + ", " + trim(hi) + "], got " + n.Scalar());
  return v;
}

uint64_t Reader::whole(const YAML::Node& n, const std::string& field, uint64_t lo, uint64_t hi) const {
  const uint64_t v = scalar_as<uint64_t>(*this, n, field, "a whole number");
  if (v < lo || v > hi) fail(n, field, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + n.Scalar());
  return v;
}

bool Reader::boolean(const YAML::Node& n, const std::string& field) const {
  try {
    return n.as<bool>();
  } catch (const YAML::Exception&) {
    fail(n, field, "expected true or false");
  }
}

uint64_t Reader::size(const YAML::Node& n, const std::string& field, uint64_t lo, uint64_t hi) const {
  const std::string t = n.IsScalar() ? n.Scalar() : "";
  const char unit = t.empty() ? 0 : t.back();
  const int shift = unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0;
  if (shift == 0) return whole(n, field, lo, hi);
  uint64_t v = 0;
  size_t used = 0;
  try {
    v = std::stoull(t.substr(0, t.size() - 1), &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used + 1 != t.size()) fail(n, field, "expected bytes, e.g. 1048576 or 1M, got \"" + t + "\"");
  if (v > (hi >> shift) || (v << shift) < lo)
    fail(n, field, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] bytes, got " + t);
  return v << shift;
}

std::string Reader::text(const YAML::Node& n, const std::string& field) const {
  if (!n.IsScalar()) fail(n, field, "expected text");
  return n.Scalar();
}

Status read_yaml(std::string_view text, const std::string& source,
                 const std::function<void(const Reader&, const YAML::Node& root)>& read) {
  const Reader r(source);
  try {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::ParserException& e) {
      return Error{source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) + ": " + e.msg};
    }
    read(r, root);
  } catch (const YamlError& e) {
    return Error{e.text};
  } catch (const YAML::Exception& e) {
    return Error{source + ": " + e.what()};
  }
  return Status::Ok();
}

std::string resolve_path(const std::string& dir, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(dir) / path).lexically_normal().string();
}

}  // namespace xm::sim
