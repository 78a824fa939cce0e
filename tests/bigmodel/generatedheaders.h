// Safetensors bytes built by hand for the tests and benchmarks that need files no writer would
// produce: any header text behind its 8-byte length, and headers with very many tensors.
#pragma once

#include <cstdint>
#include <string>

namespace accel::test {

// The 8-byte little-endian length of `header`, the header, then `data`.
inline std::string safetensorsBytes(const std::string &header, const std::string &data = {})
{
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i)
        bytes[static_cast<size_t>(i)] = static_cast<char>((uint64_t(header.size()) >> (8 * i)) & 0xFF);
    return bytes + header + data;
}

// A valid file of `count` one-element F32 tensors "model.layers.<i>.weight" (zero data).
inline std::string manyTensorsFile(int count)
{
    std::string header = "{";
    for (int i = 0; i < count; ++i)
        header += (i ? "," : "") + ("\"model.layers." + std::to_string(i) + ".weight\":{\"dtype\":\"F32\",") +
                  "\"shape\":[1],\"data_offsets\":[" + std::to_string(4 * i) + "," + std::to_string(4 * i + 4) + "]}";
    header += "}";
    return safetensorsBytes(header, std::string(4 * static_cast<size_t>(count), '\0'));
}

} // namespace accel::test
