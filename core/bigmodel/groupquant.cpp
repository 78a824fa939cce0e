#include "core/bigmodel/groupquant.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace accel::bigmodel::groupquant {

namespace {

constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};

uint32_t field(int32_t word, int position, int bits)
{
    return (static_cast<uint32_t>(word) >> (position * bits)) & ((1u << bits) - 1u);
}

// group_size -1 (one group over all inputs) is written as groupSize <= 0.
int64_t groupWidth(int64_t groupSize, int64_t inFeatures)
{
    return groupSize > 0 ? groupSize : inFeatures;
}

int64_t groupCount(int64_t groupSize, int64_t inFeatures)
{
    const int64_t width = groupWidth(groupSize, inFeatures);
    return width > 0 ? (inFeatures + width - 1) / width : 0;
}

Result<void> checkGptq(const GptqWeight &w)
{
    if (w.bits != 2 && w.bits != 4 && w.bits != 8)
        return makeError(ErrorCode::Unsupported, "GPTQ bits " + std::to_string(w.bits) +
                                                     ": only 2, 4 and 8 are implemented (3-bit packs across words)");
    const int perWord = 32 / w.bits;
    if (w.inFeatures <= 0 || w.outFeatures <= 0 || w.inFeatures % perWord != 0 || w.outFeatures % perWord != 0)
        return makeError(ErrorCode::InvalidInput, "GPTQ weight [" + std::to_string(w.outFeatures) + ", " +
                                                      std::to_string(w.inFeatures) +
                                                      "]: both sizes must be multiples of " + std::to_string(perWord) +
                                                      " for " + std::to_string(w.bits) + "-bit packing");
    if (!w.qweight || !w.qzeros || !w.scales)
        return makeError(ErrorCode::InvalidInput, "GPTQ weight: qweight, qzeros and scales are required");
    if (w.gIdx) {
        const int64_t groups = groupCount(w.groupSize, w.inFeatures);
        for (int64_t i = 0; i < w.inFeatures; ++i)
            if (w.gIdx[i] < 0 || w.gIdx[i] >= groups)
                return makeError(ErrorCode::InvalidInput,
                                 "GPTQ g_idx[" + std::to_string(i) + "] = " + std::to_string(w.gIdx[i]) +
                                     " is not a group (0.." + std::to_string(groups - 1) + ")");
    }
    return {};
}

Result<void> checkAwq(const AwqWeight &w)
{
    if (w.inFeatures <= 0 || w.outFeatures <= 0 || w.outFeatures % 8 != 0)
        return makeError(ErrorCode::InvalidInput, "AWQ weight [" + std::to_string(w.outFeatures) + ", " +
                                                      std::to_string(w.inFeatures) +
                                                      "]: the output size must be a multiple of 8");
    if (!w.qweight || !w.qzeros || !w.scales)
        return makeError(ErrorCode::InvalidInput, "AWQ weight: qweight, qzeros and scales are required");
    return {};
}

} // namespace

Result<void> unpackGptq(const GptqWeight &w, int32_t *q, int32_t *z)
{
    if (auto ok = checkGptq(w); !ok)
        return ok;
    const int perWord = 32 / w.bits;
    for (int64_t i = 0; i < w.inFeatures; ++i)
        for (int64_t o = 0; o < w.outFeatures; ++o)
            q[i * w.outFeatures + o] =
                int32_t(field(w.qweight[(i / perWord) * w.outFeatures + o], int(i % perWord), w.bits));
    const int64_t groups = groupCount(w.groupSize, w.inFeatures);
    const int64_t packedColumns = w.outFeatures / perWord;
    for (int64_t g = 0; g < groups; ++g)
        for (int64_t o = 0; o < w.outFeatures; ++o) {
            const int32_t stored = int32_t(field(w.qzeros[g * packedColumns + o / perWord], int(o % perWord), w.bits));
            z[g * w.outFeatures + o] = w.format == GptqFormat::V1 ? stored + 1 : stored;
        }
    return {};
}

Result<void> unpackAwq(const AwqWeight &w, int32_t *q, int32_t *z)
{
    if (auto ok = checkAwq(w); !ok)
        return ok;
    const int64_t columns = w.outFeatures / 8;
    auto unpackRow = [&](const int32_t *packed, int32_t *row) {
        for (int64_t c = 0; c < columns; ++c)
            for (int j = 0; j < 8; ++j)
                row[c * 8 + kAwqOrder[j]] = int32_t(field(packed[c], j, 4));
    };
    for (int64_t i = 0; i < w.inFeatures; ++i)
        unpackRow(w.qweight + i * columns, q + i * w.outFeatures);
    for (int64_t g = 0; g < groupCount(w.groupSize, w.inFeatures); ++g)
        unpackRow(w.qzeros + g * columns, z + g * w.outFeatures);
    return {};
}

namespace {

// W[o, i] = s[g, o] * (q[i, o] - z[g, o]), g the group of input i (g_idx, else i / width).
void applyGroups(const std::vector<int32_t> &q, const std::vector<int32_t> &z, const float *scales, const int32_t *gIdx,
                 int64_t in, int64_t out, int64_t width, float *weight)
{
    for (int64_t i = 0; i < in; ++i) {
        const int64_t g = gIdx ? gIdx[i] : i / width;
        for (int64_t o = 0; o < out; ++o)
            weight[o * in + i] = scales[g * out + o] * float(q[i * out + o] - z[g * out + o]);
    }
}

} // namespace

Result<void> dequantizeGptq(const GptqWeight &w, float *out)
{
    std::vector<int32_t> q(size_t(std::max<int64_t>(w.inFeatures * w.outFeatures, 0)));
    std::vector<int32_t> z(size_t(std::max<int64_t>(groupCount(w.groupSize, w.inFeatures) * w.outFeatures, 0)));
    if (auto ok = unpackGptq(w, q.data(), z.data()); !ok)
        return ok;
    applyGroups(q, z, w.scales, w.gIdx, w.inFeatures, w.outFeatures, groupWidth(w.groupSize, w.inFeatures), out);
    return {};
}

Result<void> dequantizeAwq(const AwqWeight &w, float *out)
{
    std::vector<int32_t> q(size_t(std::max<int64_t>(w.inFeatures * w.outFeatures, 0)));
    std::vector<int32_t> z(size_t(std::max<int64_t>(groupCount(w.groupSize, w.inFeatures) * w.outFeatures, 0)));
    if (auto ok = unpackAwq(w, q.data(), z.data()); !ok)
        return ok;
    applyGroups(q, z, w.scales, nullptr, w.inFeatures, w.outFeatures, groupWidth(w.groupSize, w.inFeatures), out);
    return {};
}

float halfToFloat(uint16_t h)
{
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1Fu;
    uint32_t mantissa = h & 0x3FFu;
    uint32_t bits;
    if (exponent == 0x1F) {
        bits = sign | 0x7F800000u | (mantissa << 13); // inf, nan
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else { // subnormal: normalise
        exponent = 113;
        while (!(mantissa & 0x400u)) {
            mantissa <<= 1;
            --exponent;
        }
        bits = sign | (exponent << 23) | ((mantissa & 0x3FFu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t floatToHalf(float value)
{
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    const uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) // nan: keep it quiet
        return uint16_t(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));
    if (magnitude >= 0x477FF000u) // rounds to or beyond 65520: infinity
        return uint16_t(sign | 0x7C00u);
    if (magnitude < 0x38800000u) { // below the smallest normal half: subnormal or zero
        if (magnitude < 0x33000000u)
            return sign; // below half the smallest subnormal
        const uint32_t exponent = magnitude >> 23;
        const uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
        const uint32_t shift = 126 - exponent; // 14 + (127 - 15) - exponent ... to subnormal units
        const uint32_t rounded = mantissa >> shift;
        const uint32_t rest = mantissa & ((1u << shift) - 1u), half = 1u << (shift - 1);
        return uint16_t(sign | (rounded + (rest > half || (rest == half && (rounded & 1u)))));
    }
    const uint32_t rounded = magnitude - 0x38000000u; // rebias 127 -> 15
    const uint32_t rest = rounded & 0x1FFFu;
    uint32_t half = rounded >> 13;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
        ++half;
    return uint16_t(sign | half);
}

} // namespace accel::bigmodel::groupquant
