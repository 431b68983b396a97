// Human-readable sizes, rates and durations.
//
// ParseSize accepts a number (integer or decimal) with an optional unit, case-insensitive:
//   none or "b"                     bytes
//   k m g t p  /  KiB MiB GiB TiB   powers of 1024 (fio's and dd's single-letter convention)
//   KB MB GB TB                     powers of 1000 (SI)
// and an optional "/s" or "ps" suffix for rates ("500MB/s", "500MBps"). Bits are SI and
// divided by 8: "4Gbit/s", "100Mbit", "4Gbps" (a lower-case "b" before "ps" is bits).
// Examples: "4k" = 4096, "1MiB" = 1048576, "1.5GB" = 1500000000. Errors name the offending text.
//
// ParseDuration accepts a number with an optional unit: none or "s" (seconds), "ms", "us" (or
// "µs"), "ns", "m" (minutes), "h", "d", as fio's time options do: "1ms" = 0.001, "0.2ms",
// "50us", "2".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "src/status.h"

namespace ds {

// s with A-Z as a-z (bytes outside ASCII as they are).
std::string AsciiLower(std::string_view s);
Result<uint64_t> ParseSize(std::string_view text);
Result<double> ParseDuration(std::string_view text);  // in seconds
std::string FormatBytes(uint64_t bytes);              // binary units: "110.2 KiB", "3.0 GiB"
std::string FormatRate(double bytes_per_sec);         // SI units like fio: "523.4 MB/s"
std::string FormatCount(double per_sec);              // "12.3k"
std::string FormatDuration(double seconds);  // "85 us", "2.5 ms", "850 ms", "12.40 s", "3m05s"

}  // namespace ds

namespace ds {
// Makes arbitrary bytes (keys, paths) safe for one-line messages: printable ASCII and valid
// UTF-8 pass through; control bytes and invalid UTF-8 become \xNN, '\\' becomes "\\\\".
std::string EscapeBytes(std::string_view s);

// Edit distance (Levenshtein) of two names, for "did you mean --format?".
size_t EditDistance(std::string_view a, std::string_view b);
}  // namespace ds
