#include "core/bigmodel/bnbformats.h"

#include <algorithm>
#include <cmath>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace accel::bigmodel::bnb {

namespace {

// float32 arithmetic only: every intermediate is rounded to float as PyTorch rounds a float32
// tensor operation (no wider accumulation, no fused multiply-add).
float multiply(float a, float b)
{
    volatile float product = a * b;
    return product;
}

float add(float a, float b)
{
    volatile float sum = a + b;
    return sum;
}

float divide(float a, float b)
{
    volatile float quotient = a / b;
    return quotient;
}

uint8_t nearestIndex(float scaled, const std::array<float, 16> &code)
{
    uint8_t best = 0;
    float bestDistance = std::fabs(add(scaled, -code[0]));
    for (uint8_t i = 1; i < 16; ++i) {
        const float distance = std::fabs(add(scaled, -code[i]));
        if (distance < bestDistance) {
            best = i;
            bestDistance = distance;
        }
    }
    return best;
}

} // namespace

void dequantizeInt8Rows(const int8_t *cb, const float *scb, int64_t rows, int64_t columns, float *out)
{
    const float reciprocal = 7.874015718698502e-3f; // 1/127 as bitsandbytes writes it, in float32
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < columns; ++c)
            out[r * columns + c] = multiply(multiply(static_cast<float>(cb[r * columns + c]), scb[r]), reciprocal);
}

void quantizeInt8Rows(const float *weight, int64_t rows, int64_t columns, int8_t *cb, float *scb)
{
    for (int64_t r = 0; r < rows; ++r) {
        const float *row = weight + r * columns;
        int8_t *q = cb + r * columns;
        int64_t c = 0;
        float absmax = 0;
#if defined(__SSE2__)
        // Four lanes of the same maxima (a maximum is exact, in any order); _mm_max_ps(x, m) keeps m
        // when x is NaN, as std::max(m, x) does.
        const __m128 signless = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
        __m128 most = _mm_setzero_ps();
        for (; c + 4 <= columns; c += 4)
            most = _mm_max_ps(_mm_and_ps(_mm_loadu_ps(row + c), signless), most);
        float lanes[4];
        _mm_storeu_ps(lanes, most);
        for (const float lane : lanes)
            absmax = std::max(absmax, lane);
#endif
        for (; c < columns; ++c)
            absmax = std::max(absmax, std::fabs(row[c]));
        scb[r] = absmax;
        // A row of zeros has no scale: bitsandbytes divides by zero there; it stays zero here. The
        // scale is torch's 127.0 / absmax, which PyTorch computes as reciprocal(absmax) * 127 (two
        // roundings; one division differs in the last bit and moves ties of w * scale).
        const float scale = absmax > 0 ? multiply(divide(1.0f, absmax), 127.0f) : 0.0f;
        c = 0;
#if defined(__SSE2__)
        // Sixteen at a time: each product one float32 multiply (as `multiply`), rounded to the nearest
        // integer, ties to even, by the current rounding mode (as std::nearbyint), and packed to int8.
        // |w * scale| is at most 127 and a few float32 ulps, so the saturating packs never clip.
        const __m128 scales = _mm_set1_ps(scale);
        const auto rounded = [&](int64_t at) { return _mm_cvtps_epi32(_mm_mul_ps(_mm_loadu_ps(row + at), scales)); };
        for (; c + 16 <= columns; c += 16) {
            const __m128i low = _mm_packs_epi32(rounded(c), rounded(c + 4)),
                          high = _mm_packs_epi32(rounded(c + 8), rounded(c + 12));
            _mm_storeu_si128(reinterpret_cast<__m128i *>(q + c), _mm_packs_epi16(low, high));
        }
#endif
        for (; c < columns; ++c)
            q[c] = static_cast<int8_t>(std::nearbyint(multiply(row[c], scale)));
    }
}

const char *fourBitName(FourBit type)
{
    return type == FourBit::NF4 ? "nf4" : "fp4";
}

const std::array<float, 16> &fourBitCode(FourBit type)
{
    // QLoRA's NF4: each bin holds the same area under N(0, 1), normalised to [-1, 1].
    static const std::array<float, 16> nf4 = {
        -1.0f,
        -0.6961928009986877f,
        -0.5250730514526367f,
        -0.39491748809814453f,
        -0.28444138169288635f,
        -0.18477343022823334f,
        -0.09105003625154495f,
        0.0f,
        0.07958029955625534f,
        0.16093020141124725f,
        0.24611230194568634f,
        0.33791524171829224f,
        0.44070982933044434f,
        0.5626170039176941f,
        0.7229568362236023f,
        1.0f,
    };
    // FP4 (sign, 2 exponent bits, 1 mantissa bit) divided by its largest magnitude, 12, in float32.
    static const std::array<float, 16> fp4 = [] {
        const float raw[16] = {0.0f,  0.0625f,  8.0f,  12.0f,  4.0f,  6.0f,  2.0f,  3.0f,
                               -0.0f, -0.0625f, -8.0f, -12.0f, -4.0f, -6.0f, -2.0f, -3.0f};
        std::array<float, 16> code{};
        for (int i = 0; i < 16; ++i)
            code[size_t(i)] = divide(raw[i], 12.0f);
        return code;
    }();
    return type == FourBit::NF4 ? nf4 : fp4;
}

int64_t blockCount(int64_t elements, int64_t blocksize)
{
    return (elements + blocksize - 1) / blocksize;
}

int64_t packedBytes(int64_t elements)
{
    return (elements + 1) / 2;
}

void dequantize4bit(const uint8_t *packed, const float *absmax, int64_t elements, int64_t blocksize, FourBit type,
                    float *out)
{
    const std::array<float, 16> &code = fourBitCode(type);
    for (int64_t k = 0; k < elements; ++k) {
        const uint8_t byte = packed[k / 2];
        const uint8_t index = k % 2 == 0 ? byte >> 4 : byte & 0x0F;
        out[k] = multiply(code[index], absmax[k / blocksize]);
    }
}

void quantize4bit(const float *weight, int64_t elements, int64_t blocksize, FourBit type, uint8_t *packed,
                  float *absmax)
{
    const std::array<float, 16> &code = fourBitCode(type);
    const uint8_t zero = type == FourBit::NF4 ? 7 : 0; // the code's 0.0
    std::fill(packed, packed + packedBytes(elements), uint8_t(0));
    for (int64_t b = 0; b < blockCount(elements, blocksize); ++b) {
        const int64_t begin = b * blocksize, end = std::min(elements, begin + blocksize);
        float m = 0;
        for (int64_t k = begin; k < end; ++k)
            m = std::max(m, std::fabs(weight[k]));
        absmax[b] = m;
        const float inverse = m > 0 ? divide(1.0f, m) : 0.0f;
        for (int64_t k = begin; k < end; ++k) {
            const uint8_t index =
                m > 0 ? nearestIndex(std::clamp(multiply(weight[k], inverse), -1.0f, 1.0f), code) : zero;
            packed[k / 2] |= k % 2 == 0 ? uint8_t(index << 4) : index;
        }
    }
    // The padding element of an odd count is the code's 0.0, as bitsandbytes pads with 0.
    if (elements % 2 != 0)
        packed[elements / 2] |= zero;
}

void dequantizeNestedAbsmax(const uint8_t *quantized, int64_t blocks, const float *code, const float *scales,
                            int64_t nestedBlocksize, float offset, float *absmax)
{
    for (int64_t b = 0; b < blocks; ++b)
        absmax[b] = add(multiply(code[quantized[b]], scales[b / nestedBlocksize]), offset);
}

} // namespace accel::bigmodel::bnb
