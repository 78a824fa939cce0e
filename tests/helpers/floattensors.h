// Comparing written model weights in tests: every float32 tensor of a safetensors file by name, and
// the largest difference of two tensors relative to the reference's largest value. Header-only;
// a test that includes it links accel_bigmodel.
#pragma once

#include "core/bigmodel/safetensors.h"

#include <QString>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace accel::test {

// Every float32 tensor of the safetensors file `path` by name; on failure empty, with `error` set.
inline std::map<std::string, std::vector<float>> readFloatTensors(const QString &path, QString *error)
{
    std::map<std::string, std::vector<float>> out;
    auto file = bigmodel::SafetensorsFile::open(path.toStdString());
    if (!file) {
        *error = QString::fromStdString(file.error().toString());
        return out;
    }
    for (const auto &info : (*file)->tensors()) {
        if (info.dtype != bigmodel::DType::F32)
            continue;
        std::vector<float> values(info.byteSize() / sizeof(float));
        std::memcpy(values.data(), info.data, info.byteSize());
        out[info.name] = std::move(values);
    }
    return out;
}

// max |ours - theirs| / max |theirs|; infinity for different sizes, an empty reference or a NaN.
inline double relativeDifference(const std::vector<float> &ours, const std::vector<float> &theirs)
{
    if (ours.size() != theirs.size() || theirs.empty())
        return INFINITY;
    double worst = 0, scale = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
        const double d = std::fabs(double(ours[i]) - double(theirs[i]));
        worst = std::isnan(d) ? INFINITY : std::max(worst, d);
        scale = std::max(scale, std::fabs(double(theirs[i])));
    }
    return scale > 0 ? worst / scale : INFINITY;
}

// How far the final weights of a training run split over ranks (data-parallel replicas, ZeRO, FSDP,
// tensor, context, vocabulary or sequence parallelism) may be from one rank's on the same global
// batch, as largestWeightDifference. The split changes only the order of float32 sums, but AdamW
// divides every step by sqrt(v), so the rounding of near-zero gradients becomes part of a step.
// Measured after 10 steps of the tests' tiny Llama, the largest of each kind of split:
//   - an AVX2 AMD EPYC: 2e-6 for tp 2, 4.8e-6 with the vocabulary split, 3.1e-5 for DDP on 2 ranks
//     and 3.2e-5 for tp 2 with tied embeddings;
//   - an AMX Xeon (its float32 GEMMs summing in another order): 1.05e-5 for tp 2 and for cp 2,
//     1.8e-5 with the vocabulary split, 1.9e-5 for DDP and every sharded strategy on 2 ranks,
//     7.3e-5 for dp 2 x tp 2 and 1.25e-4 for dp 2 x cp 2 (in lm_head).
// The mistakes these tests were written against move weights by far more: a norm's gradient left
// unsummed over the sequence split by 1e-2, an unsummed softmax denominator by 0.23.
inline constexpr double kSplitRunWeightTolerance = 5e-4;

// The largest relativeDifference over the float32 tensors of two safetensors files, `ours`
// against `theirs`; infinity with `error` set when a file cannot be read or the tensor counts differ.
// `where` (optional) gets the tensor it was found in.
inline double largestWeightDifference(const QString &ours, const QString &theirs, QString *error,
                                      QString *where = nullptr)
{
    auto mine = readFloatTensors(ours, error);
    auto reference = readFloatTensors(theirs, error);
    if (!error->isEmpty() || mine.size() != reference.size() || reference.empty()) {
        *error += QStringLiteral(" %1 tensors against %2").arg(mine.size()).arg(reference.size());
        return INFINITY;
    }
    double worst = 0;
    for (const auto &[tensor, values] : reference) {
        const double difference = relativeDifference(mine[tensor], values);
        if (!(difference <= worst)) {
            worst = difference;
            if (where)
                *where = QString::fromStdString(tensor);
        }
    }
    return worst;
}

} // namespace accel::test
