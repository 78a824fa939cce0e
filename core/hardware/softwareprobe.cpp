#include "core/hardware/softwareprobe.h"

#include "core/hardware/childprocess.h"
#include "core/hardware/procparsers.h"

#include <nlohmann/json.hpp>

namespace accel::hardware {

namespace {

std::string stringOr(const nlohmann::json &object, const char *key, const std::string &fallback = {})
{
    const auto found = object.find(key);
    if (found == object.end() || found->is_null())
        return fallback;
    if (found->is_string())
        return found->get<std::string>();
    return found->dump();
}

bool boolOr(const nlohmann::json &object, const char *key)
{
    const auto found = object.find(key);
    return found != object.end() && found->is_boolean() && found->get<bool>();
}

std::string firstLine(const std::string &text)
{
    const std::string trimmed = trim(text);
    const auto newline = trimmed.find('\n');
    return newline == std::string::npos ? trimmed : trimmed.substr(0, newline);
}

} // namespace

Result<WorkerCapabilities> parseWorkerCapabilities(const std::string &text)
{
    try {
        const nlohmann::json json = nlohmann::json::parse(text);
        if (!json.is_object() || json.value("schema", "") != WorkerCapabilitiesSchema)
            return makeError(ErrorCode::InvalidInput,
                             std::string("expected a JSON object with \"schema\": \"") + WorkerCapabilitiesSchema +
                                 "\"",
                             "accel-worker --capabilities --json");
        WorkerCapabilities capabilities;
        capabilities.available = true;
        capabilities.torchVersion = stringOr(json, "torch_version");
        capabilities.cudaCompiled = boolOr(json, "cuda_compiled");
        capabilities.cuda = boolOr(json, "cuda");
        if (const auto gpus = json.find("gpu_count"); gpus != json.end() && gpus->is_number_integer())
            capabilities.gpuCount = gpus->get<int>();
        capabilities.cudaVersion = stringOr(json, "cuda_version");
        capabilities.cudnn = stringOr(json, "cudnn");
        capabilities.nccl = boolOr(json, "nccl");
        capabilities.ncclVersion = stringOr(json, "nccl_version");
        capabilities.gloo = boolOr(json, "gloo");
        capabilities.mpi = boolOr(json, "mpi");
        const auto threads = json.find("openmp_threads");
        if (threads != json.end() && threads->is_number_integer())
            capabilities.openmpThreads = threads->get<int>();
        capabilities.blas = stringOr(json, "blas");
        if (const auto matrix = json.find("cpu_matrix"); matrix != json.end() && matrix->is_object()) {
            for (const auto &[name, present] : matrix->items())
                if (present.is_boolean() && present.get<bool>())
                    capabilities.cpuMatrixFeatures.push_back(name);
        }
        // In the worker's order (no, bf16, fp8), which nlohmann::json's sorted objects lose.
        const auto ordered = nlohmann::ordered_json::parse(text);
        if (const auto precisions = ordered.find("cpu_precisions");
            precisions != ordered.end() && precisions->is_object()) {
            for (const auto &[name, text] : precisions->items())
                if (text.is_string())
                    capabilities.cpuPrecisions.emplace_back(name, text.get<std::string>());
        }
        return capabilities;
    } catch (const nlohmann::json::exception &error) {
        return makeError(ErrorCode::InvalidInput, std::string("not valid JSON: ") + error.what(),
                         "accel-worker --capabilities --json");
    }
}

WorkerCapabilities probeWorker(const std::string &workerPath, int timeoutMs)
{
    WorkerCapabilities unavailable;
    unavailable.path = workerPath;
    auto output = runChild(workerPath, {"--capabilities", "--json"}, timeoutMs);
    if (!output) {
        unavailable.error = output.error().toString();
        return unavailable;
    }
    if (output->exitCode != 0) {
        unavailable.error =
            workerPath + " --capabilities --json exited with " +
            (output->signal ? "signal " + std::to_string(output->signal) : "code " + std::to_string(output->exitCode)) +
            (output->err.empty() ? std::string() : ": " + firstLine(output->err));
        return unavailable;
    }
    auto parsed = parseWorkerCapabilities(output->out);
    if (!parsed) {
        unavailable.error = parsed.error().toString();
        return unavailable;
    }
    parsed->path = workerPath;
    return *parsed;
}

const std::string &pythonProbeScript()
{
    // Versions from package metadata first (fast: importing torch takes seconds), then from the
    // module itself for packages installed without metadata.
    static const std::string script = R"PY(
import json, sys, importlib
def version_of(name):
    try:
        import importlib.metadata as metadata
        return metadata.version(name)
    except Exception:
        pass
    try:
        return str(getattr(importlib.import_module(name), "__version__", "unknown"))
    except Exception:
        return None
print(json.dumps({"python": sys.version.split()[0], "executable": sys.executable,
                  "torch": version_of("torch"), "accelerate": version_of("accelerate"),
                  "numpy": version_of("numpy")}))
)PY";
    return script;
}

Result<PythonInfo> parsePythonProbe(const std::string &text)
{
    try {
        const nlohmann::json json = nlohmann::json::parse(text);
        if (!json.is_object() || !json.contains("python"))
            return makeError(ErrorCode::InvalidInput, "expected a JSON object with a \"python\" key", "python probe");
        PythonInfo info;
        info.available = true;
        info.version = stringOr(json, "python");
        info.executable = stringOr(json, "executable");
        info.torchVersion = stringOr(json, "torch", notInstalled());
        info.accelerateVersion = stringOr(json, "accelerate", notInstalled());
        info.numpyVersion = stringOr(json, "numpy", notInstalled());
        return info;
    } catch (const nlohmann::json::exception &error) {
        return makeError(ErrorCode::InvalidInput, std::string("not valid JSON: ") + error.what(), "python probe");
    }
}

PythonInfo probePython(const std::string &python, int timeoutMs)
{
    PythonInfo unavailable;
    unavailable.torchVersion = unavailable.accelerateVersion = unavailable.numpyVersion = notInstalled();
    unavailable.accelerateExecutable = findOnPath("accelerate");
    auto output = runChild(python, {"-c", pythonProbeScript()}, timeoutMs);
    if (!output) {
        unavailable.error = output.error().toString();
        return unavailable;
    }
    // The JSON is the last line: site hooks may print before it.
    const auto lines = splitLines(trim(output->out));
    if (output->exitCode != 0 || lines.empty()) {
        unavailable.error = python + " exited with code " + std::to_string(output->exitCode) +
                            (output->err.empty() ? std::string() : ": " + firstLine(output->err));
        return unavailable;
    }
    auto parsed = parsePythonProbe(lines.back());
    if (!parsed) {
        unavailable.error = parsed.error().toString();
        return unavailable;
    }
    parsed->accelerateExecutable = unavailable.accelerateExecutable;
    return *parsed;
}

} // namespace accel::hardware
