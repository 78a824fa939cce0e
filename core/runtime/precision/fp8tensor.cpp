#include "core/runtime/precision/fp8tensor.h"

#include "core/runtime/precision/fp8gemm.h"

namespace accel::runtime {

namespace {

torch::Tensor padInner(const torch::Tensor &t, int64_t dim)
{
    const int64_t size = t.size(dim), padded = (size + 15) / 16 * 16;
    if (padded == size)
        return t;
    std::vector<int64_t> pad(size_t(2 * t.dim()), 0);
    pad[size_t(2 * (t.dim() - 1 - dim) + 1)] = padded - size;
    // Zero bytes are +0 in both FP8 formats.
    return torch::constant_pad_nd(t.view(torch::kUInt8), pad, 0).view(t.scalar_type());
}

} // namespace

at::ScalarType float8Dtype(Fp8Format format)
{
    return format == Fp8Format::E4M3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2;
}

float absMax(const torch::Tensor &x)
{
    return x.abs().max().to(torch::kFloat).item<float>();
}

Fp8Tensor quantize(const torch::Tensor &x, Fp8Format format, float scale)
{
    const double max = fp8MaxFinite(format);
    auto scaled = x.to(torch::kFloat) * scale;
    return {scaled.clamp(-max, max).to(float8Dtype(format)), scale};
}

torch::Tensor dequantize(const Fp8Tensor &x)
{
    return x.data.to(torch::kFloat) / x.scale;
}

torch::Tensor scaledMm(const Fp8Tensor &a, const Fp8Tensor &b, at::ScalarType outDtype, bool padInnerDim)
{
    auto left = padInnerDim ? padInner(a.data, 1) : a.data;
    auto right = padInnerDim ? padInner(b.data, 0) : b.data;
    auto options = torch::TensorOptions().dtype(torch::kFloat).device(a.data.device());
    return at::_scaled_mm(left.contiguous(), right.t().contiguous().t(), torch::full({}, 1.0f / a.scale, options),
                          torch::full({}, 1.0f / b.scale, options), std::nullopt, std::nullopt, outDtype, false);
}

torch::Tensor fp8Matmul(const Fp8Tensor &a, const Fp8Tensor &b, at::ScalarType outDtype, bool padInnerDim,
                        Fp8GemmPolicy policy)
{
    const Fp8GemmPath path = fp8GemmPath(a.data.device().type(), policy);
    countFp8Gemm(path);
    if (path == Fp8GemmPath::ScaledMm)
        return scaledMm(a, b, outDtype, padInnerDim);
    return torch::mm(dequantize(a), dequantize(b)).to(outDtype);
}

} // namespace accel::runtime
