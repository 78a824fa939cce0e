#include "core/runtime/precision/fp8allgather.h"

#include <algorithm>
#include <stdexcept>

namespace accel::runtime {

namespace {

// The part of weight i inside the chunk: [lo, hi) in chunk coordinates (lo >= hi when none).
std::pair<int64_t, int64_t> partOf(const Fp8FlatLayout &layout, size_t i, int64_t begin, int64_t size)
{
    const int64_t lo = std::max(layout.offsets[i], begin);
    const int64_t hi = std::min(layout.offsets[i] + layout.numels[i], begin + size);
    return {lo - begin, hi - begin};
}

} // namespace

std::vector<float> fp8ChunkAmax(const torch::Tensor &chunk, int64_t begin, const Fp8FlatLayout &layout)
{
    torch::NoGradGuard noGrad;
    std::vector<float> amax(layout.offsets.size(), 0.0f);
    for (size_t i = 0; i < amax.size(); ++i) {
        const auto [lo, hi] = partOf(layout, i, begin, chunk.numel());
        if (lo < hi)
            amax[i] = absMax(chunk.narrow(0, lo, hi - lo));
    }
    return amax;
}

torch::Tensor fp8CastChunk(const torch::Tensor &chunk, int64_t begin, const Fp8FlatLayout &layout,
                           const std::vector<float> &scales)
{
    torch::NoGradGuard noGrad;
    if (scales.size() != layout.offsets.size())
        throw std::invalid_argument("fp8CastChunk: " + std::to_string(scales.size()) + " scales for " +
                                    std::to_string(layout.offsets.size()) + " weights");
    auto codes = torch::zeros({chunk.numel()}, torch::kUInt8);
    for (size_t i = 0; i < scales.size(); ++i) {
        const auto [lo, hi] = partOf(layout, i, begin, chunk.numel());
        if (lo < hi)
            codes.narrow(0, lo, hi - lo)
                .copy_(quantize(chunk.narrow(0, lo, hi - lo), Fp8Format::E4M3, scales[i]).data.view(torch::kUInt8));
    }
    return codes;
}

} // namespace accel::runtime
