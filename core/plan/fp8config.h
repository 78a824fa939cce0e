// FP8 settings as Accelerate's launcher exports them (ACCELERATE_FP8_*, from `accelerate launch
// --fp8_*` flags or a config file's fp8_config block), parsed in one place. Every spelling
// Accelerate's templates, docs and questionnaire produce is read (AMAX_HISTORY_LEN and
// ..._LENGTH, AMAX_COMPUTE_ALGO and ..._ALGORITHM, OPT_LEVEL and OPTIMIZATION_LEVEL; backend in
// any case). What the runtime does not implement is refused by name, never replaced silently.
// docs/fp8.md lists every variable, its default and what each recipe does with it.
#pragma once

#include "core/common/result.h"
#include "core/plan/envlookup.h"

#include <functional>
#include <string>

namespace accel::runtime {

enum class Fp8Backend {
    Ao,    // torchao-style dynamic tensorwise scaling (Accelerate's first choice when nothing is set)
    Te,    // TransformerEngine-style delayed scaling
    MsAmp, // MS-AMP-style O1 / O2
};
enum class Fp8RecipeFormat { Hybrid, E4M3 }; // HYBRID: E4M3 forward, E5M2 backward
enum class AmaxComputeAlgo { Max, MostRecent };
enum class MsAmpLevel { O1, O2 };
// How an FP8 GEMM is computed (ACCEL_FP8_GEMM, docs/fp8.md "The GEMM"): `auto` measures, per
// device and shape class, torch::_scaled_mm against the dequantised product and takes _scaled_mm
// unless it costs more than twice as much; `scaled_mm` and `dequantized` force one.
enum class Fp8GemmPolicy { Auto, ScaledMm, Dequantized };
inline constexpr const char *fp8GemmVariable = "ACCEL_FP8_GEMM";
const char *fp8GemmPolicyName(Fp8GemmPolicy policy); // "auto" / "scaled_mm" / "dequantized"

const char *fp8BackendName(Fp8Backend backend); // "AO" / "TE" / "MSAMP"

struct Fp8Config {
    Fp8Backend backend = Fp8Backend::Ao;
    // TE (DelayedScaling)
    Fp8RecipeFormat format = Fp8RecipeFormat::Hybrid;
    int margin = 0;
    int amaxHistoryLen = 1024;
    AmaxComputeAlgo amaxComputeAlgo = AmaxComputeAlgo::Max;
    bool useAutocastDuringEval = false;
    bool overrideWgrad = false; // weight-gradient GEMM in high precision
    bool reduceAmax = true;     // current amaxes all-reduced (MAX) across ranks before each update
    // MS-AMP
    MsAmpLevel optLevel = MsAmpLevel::O2;
    // AO
    bool padInnerDim = true;
    bool enableFsdpFloat8AllGather = true;
    // The runtime's own (every recipe)
    Fp8GemmPolicy gemm = Fp8GemmPolicy::Auto;

    using Lookup = EnvLookup;
    // Reads ACCELERATE_FP8_* and ACCEL_FP8_GEMM; a bad or unsupported value is an error naming the
    // variable, its value and what is accepted.
    static Result<Fp8Config> fromEnvironment(const Lookup &lookup);
    // One line for logs: "fp8 TE: HYBRID, margin 0, amax history 1024 (max)".
    std::string describe() const;
    // Bytes per parameter of Adam's two moments when the recipe stores them (MS-AMP's MsAmpAdamW:
    // O2 3, an E4M3 first moment and an FP16 second; O1 8, two float32), 0 when the optimizer keeps
    // its own (TE, AO). MS-AMP keeps no master weights at O1 / O2.
    int adamMomentBytesPerParameter() const;
};

} // namespace accel::runtime
