#include "core/runtime/precision/float8format.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace accel::runtime {

namespace {

uint32_t bitsOf(float value)
{
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    return bits;
}

float fromBits(uint32_t bits)
{
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
}

// Round to nearest even on the top mantissa bits of a float32. Below the smallest normal the
// code is found by adding a "magic" float whose exponent puts the wanted bits at the bottom of
// the mantissa, so the float32 adder itself rounds to nearest even.
struct Layout {
    int mantissaBits;       // 3 or 2
    int bias;               // 7 or 15
    uint32_t overflowBits;  // |x| bits at or above this do not round to a finite code
    uint32_t minNormalBits; // float32 bits of the smallest normal of the format
    uint32_t magicBits;     // float32 whose ulp is the format's smallest subnormal
};

constexpr Layout e4m3{3, 7, UINT32_C(1087) << 20 /* 480.0f */, UINT32_C(121) << 23 /* 2^-6 */,
                      UINT32_C(141) << 23 /* 2^14: ulp 2^-9 */};
constexpr Layout e5m2{2, 15, UINT32_C(143) << 23 /* 65536.0f */, UINT32_C(113) << 23 /* 2^-14 */,
                      UINT32_C(134) << 23 /* 2^7: ulp 2^-16 */};

uint8_t encodeMagnitude(uint32_t absBits, const Layout &layout)
{
    if (absBits < layout.minNormalBits) {
        const uint32_t sum = bitsOf(fromBits(absBits) + fromBits(layout.magicBits));
        return uint8_t(sum - layout.magicBits);
    }
    const int shift = 23 - layout.mantissaBits;
    const uint32_t odd = (absBits >> shift) & 1u;
    uint32_t rounded = absBits + (uint32_t(layout.bias - 127) << 23) + ((1u << (shift - 1)) - 1u) + odd;
    return uint8_t(rounded >> shift);
}

} // namespace

const char *fp8FormatName(Fp8Format format)
{
    return format == Fp8Format::E4M3 ? "E4M3" : "E5M2";
}

float fp8MaxFinite(Fp8Format format)
{
    return format == Fp8Format::E4M3 ? 448.0f : 57344.0f;
}

float decodeFloat8(uint8_t code, Fp8Format format)
{
    const bool negative = code & 0x80u;
    const float sign = negative ? -1.0f : 1.0f;
    if (format == Fp8Format::E4M3) {
        const int exponent = (code >> 3) & 0xF, mantissa = code & 0x7;
        if (exponent == 0xF && mantissa == 0x7)
            return std::copysign(std::numeric_limits<float>::quiet_NaN(), sign);
        if (exponent == 0)
            return sign * std::ldexp(float(mantissa), -9);
        return sign * std::ldexp(float(8 + mantissa), exponent - 10);
    }
    const int exponent = (code >> 2) & 0x1F, mantissa = code & 0x3;
    if (exponent == 0x1F) {
        return mantissa == 0 ? sign * std::numeric_limits<float>::infinity()
                             : std::copysign(std::numeric_limits<float>::quiet_NaN(), sign);
    }
    if (exponent == 0)
        return sign * std::ldexp(float(mantissa), -16);
    return sign * std::ldexp(float(4 + mantissa), exponent - 17);
}

uint8_t encodeFloat8(float value, Fp8Format format)
{
    const uint32_t bits = bitsOf(value);
    const uint32_t sign = bits & UINT32_C(0x80000000);
    const uint32_t absBits = bits ^ sign;
    const Layout &layout = format == Fp8Format::E4M3 ? e4m3 : e5m2;
    uint8_t code;
    if (absBits >= layout.overflowBits) {
        const bool nan = absBits > (UINT32_C(255) << 23);
        code = format == Fp8Format::E4M3 ? 0x7F : (nan ? 0x7F : 0x7C);
    } else {
        code = encodeMagnitude(absBits, layout);
    }
    return uint8_t(code | (sign >> 24));
}

uint8_t encodeFloat8Saturating(float value, Fp8Format format)
{
    if (std::isnan(value))
        return encodeFloat8(value, format);
    const float max = fp8MaxFinite(format);
    return encodeFloat8(std::fmax(-max, std::fmin(max, value)), format);
}

} // namespace accel::runtime
