#include "core/plan/fp8config.h"

#include "core/common/accelerateenv.h"
#include "core/common/text.h"

#include <algorithm>
#include <cctype>
#include <optional>

namespace accel::runtime {

namespace {

using text::upper;

struct Value {
    std::string name; // the variable that was set
    std::string text;
};

class Reader {
public:
    explicit Reader(const Fp8Config::Lookup &lookup) : m_lookup(lookup) {}

    // The value of the variable names[0] or, when unset, of the other spellings; two spellings with
    // different values are an error (which one would Accelerate read? only the first).
    Result<std::optional<Value>> get(std::initializer_list<const char *> names) const
    {
        std::optional<Value> found;
        for (const char *name : names) {
            const char *raw = m_lookup(name);
            if (!raw || !*raw)
                continue;
            Value value{name, text::trim(raw)};
            if (found && upper(found->text) != upper(value.text))
                return makeError(ErrorCode::InvalidInput, "environment variables " + found->name + "=" + found->text +
                                                              " and " + value.name + "=" + value.text +
                                                              " disagree: set one of them");
            if (!found)
                found = value;
        }
        return found;
    }

private:
    const Fp8Config::Lookup &m_lookup;
};

Error invalid(const Value &value, const std::string &expected)
{
    return Error{ErrorCode::InvalidInput,
                 "environment variable " + value.name + "=" + value.text + ": expected " + expected,
                 {}};
}

Error unsupported(const Value &value, const std::string &why)
{
    return Error{ErrorCode::Unsupported, "environment variable " + value.name + "=" + value.text + ": " + why, {}};
}

// Python's str_to_bool, which Accelerate's parse_flag_from_env uses.
std::optional<bool> parseBool(const std::string &text)
{
    const std::string v = text::lower(text);
    if (v == "1" || v == "y" || v == "yes" || v == "t" || v == "true" || v == "on")
        return true;
    if (v == "0" || v == "n" || v == "no" || v == "f" || v == "false" || v == "off")
        return false;
    return std::nullopt;
}

std::optional<int> parseInt(const std::string &text, int minimum, int maximum)
{
    try {
        size_t used = 0;
        const long long parsed = std::stoll(text, &used);
        if (used != text.size() || parsed < minimum || parsed > maximum)
            return std::nullopt;
        return int(parsed);
    } catch (const std::exception &) {
        return std::nullopt;
    }
}

} // namespace

const char *fp8BackendName(Fp8Backend backend)
{
    switch (backend) {
    case Fp8Backend::Ao:
        return "AO";
    case Fp8Backend::Te:
        return "TE";
    case Fp8Backend::MsAmp:
        return "MSAMP";
    }
    return "AO";
}

const char *fp8GemmPolicyName(Fp8GemmPolicy policy)
{
    switch (policy) {
    case Fp8GemmPolicy::Auto:
        return "auto";
    case Fp8GemmPolicy::ScaledMm:
        return "scaled_mm";
    case Fp8GemmPolicy::Dequantized:
        return "dequantized";
    }
    return "auto";
}

Result<Fp8Config> Fp8Config::fromEnvironment(const Lookup &lookup)
{
    Fp8Config config;
    Reader reader(lookup);
#define ACCEL_FP8_READ(var, ...)                                                                                       \
    auto var##Read = reader.get({__VA_ARGS__});                                                                        \
    if (!var##Read)                                                                                                    \
        return tl::unexpected(var##Read.error());                                                                      \
    const std::optional<Value> &var = *var##Read;

    ACCEL_FP8_READ(backend, accelerateenv::kFp8Backend)
    if (backend) {
        const std::string v = upper(backend->text);
        if (v == "AO")
            config.backend = Fp8Backend::Ao;
        else if (v == "TE")
            config.backend = Fp8Backend::Te;
        else if (v == "MSAMP")
            config.backend = Fp8Backend::MsAmp;
        else
            return tl::unexpected(invalid(*backend, "one of AO, TE, MSAMP (any case)"));
    }
    ACCEL_FP8_READ(format, accelerateenv::kFp8Format)
    if (format) {
        const std::string v = upper(format->text);
        if (v == "HYBRID")
            config.format = Fp8RecipeFormat::Hybrid;
        else if (v == "E4M3")
            config.format = Fp8RecipeFormat::E4M3;
        else if (v == "E5M2")
            return tl::unexpected(unsupported(
                *format, "pure E5M2 training is not supported (as in TransformerEngine); use HYBRID or E4M3"));
        else
            return tl::unexpected(invalid(*format, "one of HYBRID, E4M3"));
    }
    ACCEL_FP8_READ(margin, accelerateenv::kFp8Margin)
    if (margin) {
        auto parsed = parseInt(margin->text, 0, 64);
        if (!parsed)
            return tl::unexpected(invalid(*margin, "an integer from 0 to 64"));
        config.margin = *parsed;
    }
    ACCEL_FP8_READ(history, accelerateenv::kFp8AmaxHistoryLen, accelerateenv::kFp8AmaxHistoryLength)
    if (history) {
        auto parsed = parseInt(history->text, 1, 1 << 20);
        if (!parsed)
            return tl::unexpected(invalid(*history, "an integer from 1 to 1048576"));
        config.amaxHistoryLen = *parsed;
    }
    ACCEL_FP8_READ(algo, accelerateenv::kFp8AmaxComputeAlgo, accelerateenv::kFp8AmaxComputeAlgorithm)
    if (algo) {
        const std::string v = text::lower(algo->text);
        if (v == "max")
            config.amaxComputeAlgo = AmaxComputeAlgo::Max;
        else if (v == "most_recent")
            config.amaxComputeAlgo = AmaxComputeAlgo::MostRecent;
        else
            return tl::unexpected(invalid(*algo, "max or most_recent"));
    }
    ACCEL_FP8_READ(interval, accelerateenv::kFp8Interval)
    if (interval && !parseInt(interval->text, 1, 1 << 30))
        return tl::unexpected(invalid(*interval, "a positive integer (it has no effect: see docs/fp8.md)"));
    ACCEL_FP8_READ(level, accelerateenv::kFp8OptLevel, accelerateenv::kFp8OptimizationLevel)
    if (level) {
        const std::string v = upper(level->text);
        if (v == "O1")
            config.optLevel = MsAmpLevel::O1;
        else if (v == "O2")
            config.optLevel = MsAmpLevel::O2;
        else if (v == "O3")
            return tl::unexpected(unsupported(
                *level, "MS-AMP's O3 (FP8 weights, FP16 master weights) exists only under DeepSpeed ZeRO and is "
                        "not implemented; use O1 or O2"));
        else
            return tl::unexpected(invalid(*level, "O1 or O2"));
    }
    // One spelling each. (An initializer_list member here would dangle: its array dies with the
    // pair's constructor call, and the rank read freed memory.)
    const std::pair<bool *, const char *> flags[] = {
        {&config.useAutocastDuringEval, accelerateenv::kFp8UseAutocastDuringEval},
        {&config.padInnerDim, accelerateenv::kFp8PadInnerDim},
        {&config.enableFsdpFloat8AllGather, accelerateenv::kFp8EnableFsdpFloat8AllGather},
        {&config.overrideWgrad, accelerateenv::kFp8OverrideWgrad},
    };
    for (const auto &[target, name] : flags) {
        ACCEL_FP8_READ(flag, name)
        if (flag) {
            auto parsed = parseBool(flag->text);
            if (!parsed)
                return tl::unexpected(invalid(*flag, "true or false (1/0, yes/no, on/off, t/f, y/n; any case)"));
            *target = *parsed;
        }
    }
    for (const char *gemm : {accelerateenv::kFp8OverrideFprop, accelerateenv::kFp8OverrideDgrad}) {
        ACCEL_FP8_READ(flag, gemm)
        if (!flag)
            continue;
        auto parsed = parseBool(flag->text);
        if (!parsed)
            return tl::unexpected(invalid(*flag, "true or false (1/0, yes/no, on/off, t/f, y/n; any case)"));
        if (*parsed)
            return tl::unexpected(unsupported(*flag, "only the weight-gradient GEMM can run in high precision "
                                                     "(override_linear_precision = [false, false, true])"));
    }
    ACCEL_FP8_READ(mxfp8, accelerateenv::kFp8UseMxfp8BlockScaling)
    if (mxfp8) {
        auto parsed = parseBool(mxfp8->text);
        if (!parsed)
            return tl::unexpected(invalid(*mxfp8, "true or false"));
        if (*parsed)
            return tl::unexpected(unsupported(*mxfp8, "MXFP8 block scaling is not implemented"));
    }
#undef ACCEL_FP8_READ
    if (const char *raw = lookup(fp8GemmVariable); raw && *raw) {
        const Value gemm{fp8GemmVariable, text::trim(raw)};
        const std::string v = text::lower(gemm.text);
        bool known = false;
        for (const auto policy : {Fp8GemmPolicy::Auto, Fp8GemmPolicy::ScaledMm, Fp8GemmPolicy::Dequantized}) {
            if (v == fp8GemmPolicyName(policy)) {
                config.gemm = policy;
                known = true;
            }
        }
        if (!known)
            return tl::unexpected(invalid(gemm, "auto, scaled_mm or dequantized"));
    }
    return config;
}

int Fp8Config::adamMomentBytesPerParameter() const
{
    if (backend != Fp8Backend::MsAmp)
        return 0;
    return optLevel == MsAmpLevel::O2 ? 1 + 2 : 4 + 4;
}

std::string Fp8Config::describe() const
{
    // The GEMM path is named when forced; under `auto` the log names the path each shape class took.
    const std::string gemmText =
        gemm == Fp8GemmPolicy::Auto ? std::string() : std::string(", GEMM ") + fp8GemmPolicyName(gemm);
    switch (backend) {
    case Fp8Backend::Te:
        return std::string("fp8 TE delayed scaling: ") + (format == Fp8RecipeFormat::Hybrid ? "HYBRID" : "E4M3") +
               ", margin " + std::to_string(margin) + ", amax history " + std::to_string(amaxHistoryLen) + " (" +
               (amaxComputeAlgo == AmaxComputeAlgo::Max ? "max" : "most_recent") + ")" +
               (overrideWgrad ? ", wgrad in high precision" : "") +
               (useAutocastDuringEval ? ", fp8 in evaluation" : "") + gemmText;
    case Fp8Backend::MsAmp:
        return std::string("fp8 MS-AMP ") + (optLevel == MsAmpLevel::O1 ? "O1" : "O2") + gemmText;
    case Fp8Backend::Ao:
        return std::string("fp8 AO dynamic tensorwise scaling") +
               (padInnerDim ? ", inner dimension padded to 16" : "") + gemmText;
    }
    return {};
}

} // namespace accel::runtime
