// Tensors in FP8: the saturating cast with a per-tensor scale (value = code / scale) through
// libtorch's float8 dtypes, and the GEMM of two such tensors: torch::_scaled_mm, or both operands
// dequantised to float32 and multiplied there, as fp8gemm.h chooses.
#pragma once

#include "core/plan/fp8config.h"
#include "core/runtime/precision/float8format.h"

#include <torch/torch.h>

namespace accel::runtime {

at::ScalarType float8Dtype(Fp8Format format);

struct Fp8Tensor {
    torch::Tensor data; // float8_e4m3fn or float8_e5m2
    float scale = 1.0f; // data = saturate(value * scale)
};

// max |x| as float (NaN if x holds a NaN).
float absMax(const torch::Tensor &x);
// saturate(x.float() * scale) to the format (clamp to +-max, NaN stays NaN).
Fp8Tensor quantize(const torch::Tensor &x, Fp8Format format, float scale);
// data.float() / scale.
torch::Tensor dequantize(const Fp8Tensor &x);
// a [M, K] @ b [K, N] in float32 (then out_dtype) on the path fp8GemmPath() gives for the
// operands' device, shape and `policy`: scaledMm(), or both operands dequantised and multiplied in
// float32. The two agree within float32 rounding (_scaled_mm applies the scales to the product,
// the dequantised product to the operands). padInnerDim zero-pads K to a multiple of 16 where the
// hardware GEMM needs it. Each product is counted (takeFp8GemmCounts).
torch::Tensor fp8Matmul(const Fp8Tensor &a, const Fp8Tensor &b, at::ScalarType outDtype, bool padInnerDim = false,
                        Fp8GemmPolicy policy = Fp8GemmPolicy::Auto);
// The product through torch::_scaled_mm on the operands' device, with the hardware GEMM's
// contract: A row-major, B column-major, the inverse scales, K zero-padded to a multiple of 16
// when padInnerDim.
torch::Tensor scaledMm(const Fp8Tensor &a, const Fp8Tensor &b, at::ScalarType outDtype, bool padInnerDim);

} // namespace accel::runtime
