// The two 8-bit floating point formats of FP8 training, bit for bit as PyTorch's dtypes
// float8_e4m3fn and float8_e5m2 define them (docs/fp8.md, "Formats"). Scalar and dependency-free:
// the tensor casts in fp8tensor.h use libtorch's own dtypes, and the tests check that both agree
// with PyTorch on every code.
#pragma once

#include <cstdint>
#include <string>

namespace accel::runtime {

enum class Fp8Format {
    E4M3, // float8_e4m3fn: bias 7, max 448, no infinity, NaN = S.1111.111
    E5M2, // float8_e5m2: bias 15, max 57344, +-infinity, IEEE-style NaNs
};

const char *fp8FormatName(Fp8Format format); // "E4M3" / "E5M2"
float fp8MaxFinite(Fp8Format format);        // 448 / 57344

// Exact value of a code (NaN codes decode to a quiet NaN with the code's sign).
float decodeFloat8(uint8_t code, Fp8Format format);

// float32 -> code the way PyTorch casts (round to nearest, ties to even, subnormals included):
// E4M3: |x| > 464 (after rounding past 448), infinity and NaN -> NaN (sign kept);
// E5M2: |x| >= 61440 -> +-infinity, NaN -> NaN.
uint8_t encodeFloat8(float value, Fp8Format format);

// The saturating cast every FP8 recipe uses: finite and infinite values beyond the largest finite
// value become +-max, NaN stays NaN; otherwise identical to encodeFloat8.
uint8_t encodeFloat8Saturating(float value, Fp8Format format);

} // namespace accel::runtime
