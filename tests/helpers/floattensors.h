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

// The largest relativeDifference over the float32 tensors of two safetensors files, `ours`
// against `theirs`; infinity with `error` set when a file cannot be read or the tensor counts differ.
inline double largestWeightDifference(const QString &ours, const QString &theirs, QString *error)
{
    auto mine = readFloatTensors(ours, error);
    auto reference = readFloatTensors(theirs, error);
    if (!error->isEmpty() || mine.size() != reference.size() || reference.empty()) {
        *error += QStringLiteral(" %1 tensors against %2").arg(mine.size()).arg(reference.size());
        return INFINITY;
    }
    double worst = 0;
    for (const auto &[tensor, values] : reference)
        worst = std::max(worst, relativeDifference(mine[tensor], values));
    return worst;
}

} // namespace accel::test
