// A job file (docs/jobs.md): which recipe one accel-worker rank runs and its settings.
// yaml-cpp stays inside jobspec.cpp; recipes read typed values whose errors name the file,
// the key, the bad value and what would be valid.
#pragma once

#include "core/common/result.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace accel::worker {

struct TrainingSettings {
    int64_t maxSteps = 100;
    int64_t batchSize = 8; // per process
    double learningRate = 3e-4;
    int64_t warmupSteps = 0;
    double minLrRatio = 0.1; // cosine decays to learningRate * minLrRatio
    double weightDecay = 0.0;
    double gradClip = 0.0; // 0 = no clipping
    int gradientAccumulationSteps = 1;
    std::string mixedPrecision; // "" = from the environment (ACCELERATE_MIXED_PRECISION)
    int64_t logEvery = 10;
    int64_t evalEvery = 0; // 0 = no evaluation
    int64_t evalBatches = 4;
    int64_t checkpointEvery = 0; // 0 = only at the end when checkpointAtEnd
    bool checkpointAtEnd = false;
    int checkpointTotalLimit = 0;
    std::string resume = "auto"; // auto (latest checkpoint if any), none, or a folder
    double bucketCapMb = 25;
    double timeoutS = 1800;
    bool shuffle = true;
};

struct JobSpec {
    std::string path;   // the job file, for error messages
    std::string folder; // its folder: relative paths in the job resolve against it
    std::string recipe; // one of knownRecipes()
    std::string name;
    uint64_t seed = 42;
    std::string outputDir; // resolved: output_dir, else $ACCEL_RUN_DIR, else <job>-output
    TrainingSettings training;
    // Recipe sections flattened to dotted keys: "model.n_layer" -> "4". Sequences become
    // "a.b" -> "[1, 2]" text and their items "a.b.0", "a.b.1".
    std::map<std::string, std::string> values;

    static Result<JobSpec> load(const std::string &path);
    static Result<JobSpec> parse(const std::string &yamlText, const std::string &path);

    bool has(const std::string &key) const { return values.count(key) != 0; }
    Result<int64_t> integer(const std::string &key, int64_t fallback, int64_t minimum, int64_t maximum) const;
    Result<double> number(const std::string &key, double fallback) const;
    Result<bool> boolean(const std::string &key, bool fallback) const;
    std::string text(const std::string &key, const std::string &fallback = {}) const;
    // A path value resolved against the job file's folder ("" when absent).
    std::string pathValue(const std::string &key) const;
    // Every key under `prefix.` with the prefix removed (plugin settings).
    std::map<std::string, std::string> section(const std::string &prefix) const;
};

// The recipes accel-worker runs (gpt, distill, mlp, torchscript, plugin, selftest): the one list
// the job check, the error messages, --help and --capabilities use.
const std::vector<std::string> &knownRecipes();

} // namespace accel::worker
