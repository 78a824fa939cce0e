#include "core/common/mixedprecision.h"

namespace accel {

const std::vector<std::string> &mixedPrecisionNames()
{
    static const std::vector<std::string> names{"no", "fp16", "bf16", "fp8"};
    return names;
}

const char *mixedPrecisionName(MixedPrecision precision)
{
    const auto &names = mixedPrecisionNames();
    const auto index = static_cast<size_t>(precision);
    return index < names.size() ? names[index].c_str() : names.front().c_str();
}

std::optional<MixedPrecision> mixedPrecisionFromName(const std::string &name)
{
    const auto &names = mixedPrecisionNames();
    for (size_t i = 0; i < names.size(); ++i)
        if (name == names[i])
            return static_cast<MixedPrecision>(i);
    return std::nullopt;
}

} // namespace accel
