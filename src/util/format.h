// Numbers as people read them in a terminal: 12,800 · 3.2 Tbit/s · 1.07:1.
#pragma once

#include <cstdint>
#include <string>

namespace xm {

// 12800 -> "12,800".
std::string with_commas(uint64_t value);

// Up to `digits` significant digits, trailing zeros dropped: 3.200 -> "3.2".
std::string trimmed(double value, int digits = 4);

// Gbit/s in the largest unit that keeps the number at or above 1: 3200 -> "3.2 Tbit/s".
std::string bandwidth(double gbps);

// One number through a printf format: formatted("%.3f", 1.5) -> "1.500".
std::string formatted(const char* format, double value);

// A down:up ratio: 1 -> "1:1", 1.0667 -> "1.07:1".
std::string ratio(double value);

}  // namespace xm
