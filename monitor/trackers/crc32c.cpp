#include "monitor/trackers/crc32c.h"

#include <array>

namespace accel::trackers {

namespace {

// Table of the reflected polynomial 0x82f63b78, one byte at a time.
std::array<std::uint32_t, 256> makeTable()
{
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t crc = i;
        for (int bit = 0; bit < 8; ++bit)
            crc = (crc & 1u) ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
        table[i] = crc;
    }
    return table;
}

} // namespace

std::uint32_t crc32c(const void *data, std::size_t size)
{
    static const std::array<std::uint32_t, 256> table = makeTable();
    const auto *bytes = static_cast<const unsigned char *>(data);
    std::uint32_t crc = 0xffffffffu;
    for (std::size_t i = 0; i < size; ++i)
        crc = table[(crc ^ bytes[i]) & 0xffu] ^ (crc >> 8);
    return crc ^ 0xffffffffu;
}

std::uint32_t maskedCrc32c(const void *data, std::size_t size)
{
    const std::uint32_t crc = crc32c(data, size);
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

} // namespace accel::trackers
