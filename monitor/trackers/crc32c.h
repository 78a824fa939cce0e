// CRC-32C (Castagnoli), the checksum of TFRecord framing, and the "masked" form TensorFlow's
// record writers store: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
#pragma once

#include <cstddef>
#include <cstdint>

namespace accel::trackers {

std::uint32_t crc32c(const void *data, std::size_t size);
std::uint32_t maskedCrc32c(const void *data, std::size_t size);

} // namespace accel::trackers
