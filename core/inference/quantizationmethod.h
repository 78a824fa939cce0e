// The quantization methods a user chooses for loading a model (`accel generate --quantization`, serve
// requests, the Playground): torch-free and inline, so the request parsers, the CLI and the studio
// read the same list.
#pragma once

#include "core/common/result.h"

#include <algorithm>
#include <string>
#include <vector>

namespace accel::inference {

// Quantized on load: bitsandbytes' int8 rows, 4-bit NF4 or FP4 blocks (quantization.h).
inline const std::vector<std::string> &quantizationMethods()
{
    static const std::vector<std::string> methods{"int8", "nf4", "fp4"};
    return methods;
}

// One of quantizationMethods() (or "" for none); anything else is an error naming the valid ones.
inline Result<std::string> parseQuantizationMethod(const std::string &text)
{
    const auto &methods = quantizationMethods();
    if (text.empty() || std::find(methods.begin(), methods.end(), text) != methods.end())
        return text;
    std::string valid;
    for (size_t i = 0; i < methods.size(); ++i)
        valid += (i == 0 ? "" : i + 1 == methods.size() ? " or " : ", ") + methods[i];
    return makeError(ErrorCode::InvalidInput, "quantization: expected " + valid + "; got '" + text + "'");
}

} // namespace accel::inference
