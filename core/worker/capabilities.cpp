// `accel-worker --capabilities --json`: what this worker's libtorch can run here (accel env, the
// studio's hardware page). Schema accel.worker-capabilities, docs/platform.md.
#include "core/worker/jobrunner.h"

#include "core/common/jobschema.h"
#include "core/common/mixedprecision.h"
#include "core/hardware/softwareprobe.h"
#include "core/runtime/cudaplugin.h"
#include "core/runtime/precision/fp8gemm.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/cpu/Utils.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <dlfcn.h>

namespace accel::worker {

namespace {

// The version of the NCCL library libtorch loaded (ncclGetVersion, e.g. 22907 for 2.29.7), or null when
// none is loaded (a build without CUDA).
nlohmann::json ncclVersion()
{
    using GetVersion = int (*)(int *);
    auto get = reinterpret_cast<GetVersion>(::dlsym(RTLD_DEFAULT, "ncclGetVersion"));
    int code = 0;
    if (!get || get(&code) != 0 || code <= 0)
        return nullptr;
    const int major = code >= 10000 ? code / 10000 : code / 1000;
    const int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

// The CPU's matrix features as libtorch's cpuinfo sees them (the kernels it dispatches to follow
// these, not /proc/cpuinfo): AMX tiles and their types, AVX-512 BF16 / FP16, VNNI.
nlohmann::ordered_json cpuMatrixFeatures()
{
    const auto capabilities = at::cpu::get_cpu_capabilities();
    nlohmann::ordered_json features = nlohmann::ordered_json::object();
    for (const char *name : {"amx_tile", "amx_bf16", "amx_int8", "amx_fp16", "avx512_bf16", "avx512_fp16",
                             "avx512_vnni", "avx_vnni", "avx512_f", "avx2"}) {
        const auto found = capabilities.find(name);
        features[name] = found != capabilities.end() && found->second.isBool() && found->second.toBool();
    }
    return features;
}

std::string milliseconds(double seconds)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.3g ms", seconds * 1e3);
    return text;
}

// What each mixed_precision value computes its matrix products with on this CPU. fp8 is measured
// (the probe fp8 training starts with, which each run logs).
nlohmann::ordered_json cpuPrecisions(const nlohmann::ordered_json &features, const nlohmann::ordered_json &blas)
{
    const auto has = [&features](const char *name) { return features.value(name, false); };
    nlohmann::ordered_json precisions = nlohmann::ordered_json::object();
    const std::string vector = has("avx512_f") ? "AVX-512" : has("avx2") ? "AVX2" : "no AVX2";
    precisions["no"] =
        "float32 GEMM (" + (blas.is_string() ? blas.get<std::string>() : std::string("oneDNN")) + ", " + vector + ")";
    precisions["bf16"] = has("amx_bf16") ? "bf16 GEMM on AMX-BF16 tiles (oneDNN)"
                         : has("avx512_bf16")
                             ? "bf16 GEMM with AVX512-BF16 dot products (oneDNN)"
                             : "no bf16 instructions: oneDNN's reference bf16 kernel, slower than float32";
    const runtime::Fp8GemmDecision probe = runtime::measureFp8GemmProbe();
    if (probe.scaledMmSeconds <= 0)
        precisions["fp8"] = "FP8 operands, dequantized product in float32 (" + probe.why + ")";
    else
        precisions["fp8"] =
            std::string(
                probe.path == runtime::Fp8GemmPath::ScaledMm
                    ? "FP8 GEMM through torch::_scaled_mm (oneDNN)"
                    : "FP8 operands, dequantized product in float32 (torch::_scaled_mm runs a slow kernel here)") +
            "; " + std::to_string(probe.probeSize) + "^3 probe: _scaled_mm " + milliseconds(probe.scaledMmSeconds) +
            ", dequantized " + milliseconds(probe.dequantizedSeconds);
    return precisions;
}

} // namespace

std::string capabilitiesJson()
{
    nlohmann::ordered_json j;
    j["schema"] = hardware::WorkerCapabilitiesSchema;
    j["version"] = hardware::WorkerCapabilitiesVersion;
    j["worker_version"] = ACCEL_VERSION;
    j["torch_version"] = TORCH_VERSION;
    const std::string config = at::show_config();
    const auto buildSetting = [&config](const std::string &key) -> nlohmann::json {
        const auto pos = config.find(key + "=");
        if (pos == std::string::npos)
            return nullptr;
        const auto begin = pos + key.size() + 1;
        return config.substr(begin, config.find_first_of(", \n", begin) - begin);
    };
    // The NCCL process group, CUDA placement and CUDA autocast: built in, and their plugin
    // (libaccel_runtime_cuda.so, package accel-worker-cuda) loaded with the CUDA libraries.
    j["cuda_compiled"] = runtime::cudaPlugin() != nullptr;
    j["cuda_plugin"] = runtime::cudaPluginDetail(); // its path, or why it did not load
    j["cuda"] = torch::cuda::is_available();        // a GPU this process can use
    j["gpu_count"] = torch::cuda::is_available() ? int(torch::cuda::device_count()) : 0;
    j["cuda_version"] = buildSetting("CUDA_VERSION"); // libtorch's CUDA build
    j["cudnn"] = buildSetting("CUDNN_VERSION");
    j["nccl_version"] = ncclVersion();
    j["nccl"] = !j["nccl_version"].is_null();
    j["gloo"] = true;
#ifdef USE_C10D_MPI
    j["mpi"] = true;
#else
    j["mpi"] = false;
#endif
    j["openmp_threads"] = at::get_num_threads();
    j["blas"] = buildSetting("BLAS_INFO");
    // What this worker can run here: fp16 needs CUDA autocast and loss scaling on a GPU (it is
    // refused on the CPU); fp8 is the AO, TE and MSAMP recipes (docs/fp8.md).
    j["mixed_precision"] = nlohmann::ordered_json::array();
    for (const std::string &name : mixedPrecisionNames())
        if (j["cuda"].get<bool>() || name != mixedPrecisionName(MixedPrecision::Fp16))
            j["mixed_precision"].push_back(name);
    j["recipes"] = jobs::knownRecipes();
    j["cpu_matrix"] = cpuMatrixFeatures();
    j["cpu_precisions"] = cpuPrecisions(j["cpu_matrix"], j["blas"]);
    return j.dump();
}

} // namespace accel::worker
