// Tensors in FP8: the saturating cast with a per-tensor scale (value = code / scale) through
// libtorch's float8 dtypes, and the GEMM of two such tensors: torch::_scaled_mm on CUDA, else
// dequantised to float32 and multiplied there (the same numbers torchao's emulation produces).
#pragma once

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
// a [M, K] @ b [K, N] in float32 (then out_dtype): scaledMm() on CUDA, elsewhere both operands
// dequantised and multiplied. padInnerDim zero-pads K to a multiple of 16 where the hardware GEMM
// needs it.
torch::Tensor fp8Matmul(const Fp8Tensor &a, const Fp8Tensor &b, at::ScalarType outDtype, bool padInnerDim = false);
// The same product through torch::_scaled_mm on the operands' device, with the hardware GEMM's
// contract: A row-major, B column-major, the inverse scales, K zero-padded to a multiple of 16
// when padInnerDim. fp8Matmul uses it on CUDA; libtorch 2.x also runs it on the CPU, where the
// tests hold it to the dequantised product (the CPU path keeps that product: it is torchao's
// emulation bit for bit, and _scaled_mm is no faster there).
torch::Tensor scaledMm(const Fp8Tensor &a, const Fp8Tensor &b, at::ScalarType outDtype, bool padInnerDim);

} // namespace accel::runtime
