// Milliseconds on a monotonic clock: when samples arrived, for detectors and latency figures.
#pragma once

#include <chrono>
#include <cstdint>

namespace accel::monitor {

inline std::int64_t monotonicMs()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

} // namespace accel::monitor
