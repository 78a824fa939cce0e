// A Linear layer's weight [out, in] held quantized, in the formats of core/bigmodel's bnbformats.h
// and groupquant.h: bitsandbytes' int8 rows (CB, SCB), its 4-bit NF4 / FP4 blocks (packed indices,
// absmax, the code), and GPTQ / AWQ 4-bit groups (repacked at load into the same nibble layout,
// one scale and zero point per group and output row; act-order inputs permuted so that groups are
// contiguous). matmul() computes x W^T: int8 weights with up to kDecodeRows rows (decode) through
// the kernel int8kernel.h chose (ours of int8gemv.h or libtorch's _weight_int8pack_mm), more rows
// with bfloat16 activations through _weight_int8pack_mm; everything else through the kernels of
// int8gemv.h / quantkernels.h (up to 64 rows) or tiles dequantized for libtorch's GEMM (many rows).
// dequantize() gives the weights as the format defines them. Includes libtorch: only torch .cpp
// files include it.
#pragma once

#include "core/bigmodel/bnbformats.h"
#include "core/common/result.h"
#include "core/inference/int8kernel.h"
#include "core/inference/quantkernels.h"

#include <ATen/ATen.h>

#include <string>

namespace accel::inference {

class QuantizedWeight {
public:
    enum class Format { Int8Rows, FourBitCode, FourBitGroups };

    // cb int8 [out, in], scb float32 [out] (each row's absolute maximum).
    static Result<QuantizedWeight> fromInt8(at::Tensor cb, at::Tensor scb, const std::string &what);
    // packed uint8 ((out * in + 1) / 2 bytes, any shape), absmax float32 [blocks], code float32 [16].
    static Result<QuantizedWeight> fromFourBit(at::Tensor packed, at::Tensor absmax, at::Tensor code, int64_t blocksize,
                                               int64_t out, int64_t in, const std::string &name,
                                               const std::string &what);
    // q uint8 [out, in] (values 0..15, inputs in `inputOrder` when defined), scales and zero points
    // float32 [out, in / groupSize] (W = scale * (q - zero)); inputOrder int64 [in] or undefined.
    static QuantizedWeight fromGroups(const at::Tensor &q, at::Tensor scales, at::Tensor zeros, int64_t groupSize,
                                      at::Tensor inputOrder, const std::string &name);
    // Quantizes a float weight [out, in] as bitsandbytes does: int8 rows of the weight rounded to
    // float16 (Int8Params casts it), or 4-bit blocks of 64 of the weight as it is.
    static QuantizedWeight quantizeInt8(const at::Tensor &weight);
    static QuantizedWeight quantizeFourBit(const at::Tensor &weight, bigmodel::bnb::FourBit type,
                                           int64_t blocksize = bigmodel::bnb::kDefaultBlocksize);

    at::Tensor matmul(const at::Tensor &x) const; // x [..., in] -> [..., out] in x's dtype
    // Int8 rows only: x [rows, in] (float32, bfloat16 or float16) times W^T through `kernel`, in
    // x's dtype (libtorch's refusal of a dtype is thrown as its c10::Error).
    at::Tensor decodeProduct(const at::Tensor &x, Int8Kernel kernel) const;
    at::Tensor dequantize() const; // float32 [out, in], in the original input order
    uint64_t bytes() const;        // what the quantized tensors hold
    Format format() const { return m_format; }
    const std::string &name() const { return m_name; } // "int8", "nf4", "fp4", "gptq-4bit", "awq-4bit"
    int64_t outFeatures() const { return m_out; }
    int64_t inFeatures() const { return m_in; }

private:
    at::Tensor rowsAsFloat(int64_t begin, int64_t end) const; // dequantized rows, kernel order
    qk::FourBitWeight fourBitView() const;                    // the 4-bit formats' buffers
    Format m_format = Format::Int8Rows;
    std::string m_name;
    int64_t m_out = 0, m_in = 0, m_blocksize = 0;
    at::Tensor m_cb, m_scb, m_rowScale;         // int8 rows; rowScale = SCB / 127
    at::Tensor m_rowScaleBf16;                  // rowScale for _weight_int8pack_mm with bfloat16 activations
    at::Tensor m_packed, m_absmax, m_code;      // 4-bit code
    at::Tensor m_scales, m_zeros, m_inputOrder; // 4-bit groups
};

} // namespace accel::inference
