#include "ccl/tcp/rail_advice.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace xm::ccl {

std::set<std::string> parse_rail_advice(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line.substr(0, line.find('#')));
    for (std::string address; words >> address;) out.insert(address);
  }
  return out;
}

bool RailAdviceFile::refresh(std::chrono::steady_clock::time_point now, std::chrono::milliseconds every) {
  if (path_.empty() || now < next_) return false;
  next_ = now + every;
  struct stat st {};
  Stamp stamp;  // a missing file: the stamp of none
  if (::stat(path_.c_str(), &st) == 0)
    stamp = {(long long)st.st_mtim.tv_sec * 1'000'000'000 + st.st_mtim.tv_nsec, st.st_size, st.st_ino};
  if (stamp == seen_) return false;
  seen_ = stamp;
  std::set<std::string> now_advised;
  if (stamp.size >= 0) {
    std::ifstream in(path_);
    std::ostringstream text;
    text << in.rdbuf();
    now_advised = parse_rail_advice(text.str());
  }
  if (now_advised == addresses_) return false;
  addresses_ = std::move(now_advised);
  ++version_;
  return true;
}

}  // namespace xm::ccl
