// A job file (docs/jobs.md): which recipe one accel-worker rank runs and its settings.
// yaml-cpp stays inside jobspec.cpp. Every key is read through the one job schema
// (core/common/jobschema.h): parse() checks each value present against its field (type, range,
// choices, required) with an error naming the file, the key, the bad value and what would be
// valid, and an absent key reads as the schema's default.
#pragma once

#include "core/common/jobschema.h"
#include "core/common/result.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace accel::worker {

// Filled by JobSpec::parse from the job and the schema's defaults (no defaults of its own).
struct TrainingSettings {
    int64_t maxSteps = 0;
    int64_t batchSize = 0; // per process
    double learningRate = 0;
    int64_t warmupSteps = 0;
    double minLrRatio = 0; // cosine decays to learningRate * minLrRatio
    double weightDecay = 0;
    double gradClip = 0; // 0 = no clipping
    int gradientAccumulationSteps = 1;
    std::string mixedPrecision; // "" = from the environment (ACCELERATE_MIXED_PRECISION)
    int64_t logEvery = 0;
    int64_t evalEvery = 0; // 0 = no evaluation
    int64_t evalBatches = 0;
    int64_t checkpointEvery = 0; // 0 = only at the end when checkpointAtEnd
    bool checkpointAtEnd = false;
    int checkpointTotalLimit = 0;
    std::string resume; // auto (latest checkpoint if any), none, or a folder
    double bucketCapMb = 0;
    double timeoutS = 0;
    bool shuffle = false;
};

struct JobSpec {
    std::string path;   // the job file, for error messages
    std::string folder; // its folder: relative paths in the job resolve against it
    std::string recipe; // one of jobs::knownRecipes()
    std::string name;
    uint64_t seed = 0;
    std::string outputDir; // resolved: output_dir, else $ACCEL_RUN_DIR, else <job>-output
    TrainingSettings training;
    // Recipe sections flattened to dotted keys: "model.n_layer" -> "4". Sequences become
    // "a.b" -> "[1, 2]" text and their items "a.b.0", "a.b.1".
    std::map<std::string, std::string> values;

    static Result<JobSpec> load(const std::string &path);
    static Result<JobSpec> parse(const std::string &yamlText, const std::string &path);

    bool has(const std::string &key) const { return values.count(key) != 0; }
    // Typed values of the recipe's schema fields: the job's value, or the schema's default when
    // the key is absent. parse() has checked every present value, so these do not fail; asking
    // for a key outside the recipe's schema, or for an absent key without a default, throws
    // std::logic_error (a programming error, reported with the job file by the runner).
    int64_t integer(const std::string &key) const;
    double number(const std::string &key) const;
    bool boolean(const std::string &key) const;
    std::vector<int64_t> integers(const std::string &key) const; // IntegerList
    std::string text(const std::string &key) const;              // lower case for case-insensitive fields
    // A path value resolved against the job file's folder ("" when absent).
    std::string pathValue(const std::string &key) const;
    // Any key as written in the file (sequence items, keys outside the schema), or `fallback`.
    std::string raw(const std::string &key, const std::string &fallback = {}) const;
    // Every key under `prefix.` with the prefix removed (plugin settings).
    std::map<std::string, std::string> section(const std::string &prefix) const;

private:
    const jobs::JobField &schemaField(const std::string &key) const;
    std::string valueOrDefault(const std::string &key) const;
};

} // namespace accel::worker
