// Strong types for the simulator's three quantities: time (integer picoseconds), bit
// rates, and byte counts on the wire.
//
// Integer picoseconds because every link speed in use (25 … 800 Gbit/s) serialises a
// byte in a whole number of picoseconds, so a run never accumulates rounding error and
// two runs with the same seed agree to the picosecond.
#pragma once

#include <cstdint>
#include <limits>

namespace xm::sim {

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time ps(int64_t v) { return Time(v); }
  static constexpr Time ns(double v) { return Time(int64_t(v * 1e3 + (v >= 0 ? 0.5 : -0.5))); }
  static constexpr Time us(double v) { return Time(int64_t(v * 1e6 + (v >= 0 ? 0.5 : -0.5))); }
  static constexpr Time ms(double v) { return Time(int64_t(v * 1e9 + (v >= 0 ? 0.5 : -0.5))); }
  static constexpr Time seconds(double v) { return Time(int64_t(v * 1e12 + (v >= 0 ? 0.5 : -0.5))); }
  static constexpr Time infinite() { return Time(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t ps() const { return v_; }
  constexpr double ns_f() const { return double(v_) * 1e-3; }
  constexpr double us_f() const { return double(v_) * 1e-6; }
  constexpr double seconds_f() const { return double(v_) * 1e-12; }

  constexpr Time operator+(Time o) const { return Time(v_ + o.v_); }
  constexpr Time operator-(Time o) const { return Time(v_ - o.v_); }
  constexpr Time& operator+=(Time o) { v_ += o.v_; return *this; }
  constexpr Time& operator-=(Time o) { v_ -= o.v_; return *this; }
  constexpr Time operator*(int64_t k) const { return Time(v_ * k); }
  constexpr Time operator/(int64_t k) const { return Time(v_ / k); }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(int64_t v) : v_(v) {}
  int64_t v_ = 0;
};

// Bits per second.
class Rate {
 public:
  constexpr Rate() = default;
  static constexpr Rate bps(double v) { return Rate(v); }
  static constexpr Rate gbps(double v) { return Rate(v * 1e9); }
  static constexpr Rate mbps(double v) { return Rate(v * 1e6); }

  constexpr double bps() const { return v_; }
  constexpr double gbps() const { return v_ * 1e-9; }

  // Time to put `bytes` on a wire of this rate, rounded up to a whole picosecond.
  // Precondition: bps() > 0.
  Time tx_time(uint64_t bytes) const {
    double ps = double(bytes) * 8e12 / v_;
    auto whole = int64_t(ps);
    return Time::ps(double(whole) < ps ? whole + 1 : whole);
  }
  // Bytes a wire of this rate carries in `t`.
  constexpr double bytes_in(Time t) const { return v_ * t.seconds_f() / 8; }

  constexpr Rate operator*(double k) const { return Rate(v_ * k); }
  constexpr Rate operator/(double k) const { return Rate(v_ / k); }
  constexpr Rate operator+(Rate o) const { return Rate(v_ + o.v_); }
  constexpr Rate operator-(Rate o) const { return Rate(v_ - o.v_); }
  constexpr double operator/(Rate o) const { return v_ / o.v_; }
  constexpr auto operator<=>(const Rate&) const = default;

 private:
  constexpr explicit Rate(double v) : v_(v) {}
  double v_ = 0;
};

inline Rate min(Rate a, Rate b) { return a < b ? a : b; }
inline Rate max(Rate a, Rate b) { return a < b ? b : a; }
inline Time min(Time a, Time b) { return a < b ? a : b; }
inline Time max(Time a, Time b) { return a < b ? b : a; }

}  // namespace xm::sim
