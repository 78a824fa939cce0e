// accel-worker merge-lora BASE ADAPTER OUT (what `accel merge-lora` runs): a LoRA adapter in peft's
// layout folded into its base (core/inference/lora.h), written as a Hugging Face folder.
#include "core/worker/mergelora.h"

#include "core/bigmodel/memorysize.h"
#include "core/inference/inferencemodel.h"
#include "core/inference/lora.h"
#include "core/inference/pretrainedwriter.h"
#include "core/inference/torchtensors.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <optional>

namespace accel::worker {

using namespace accel::inference;

namespace {

int fail(const std::string &command, const Error &error)
{
    std::cerr << "accel-worker " << command << ": " << error.toString() << "\n";
    return exitCodeFor(error);
}

} // namespace

// merge-lora BASE ADAPTER OUT [--dtype D] [--max-shard-size S] [--json]: the base mapped in
// place, the adapter folded into its weights, the result written as a Hugging Face folder.
int mergeLoraMain(int argc, char **argv)
{
    std::vector<std::string> folders;
    std::optional<at::ScalarType> dtype;
    uint64_t maxShard = kDefaultMaxShardBytes;
    bool json = false;
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        if ((arg == "--dtype" || arg == "--max-shard-size") && i + 1 < argc) {
            const std::string value = argv[++i];
            if (arg == "--dtype") {
                auto parsed = parseComputeDType(value);
                if (!parsed)
                    return fail("merge-lora", parsed.error());
                dtype = *parsed;
            } else {
                auto size = bigmodel::parseMemorySize(value);
                if (!size || *size <= 0)
                    return fail("merge-lora", Error{ErrorCode::InvalidInput,
                                                    "--max-shard-size: expected a size such as 5GB; got " + value,
                                                    {}});
                maxShard = uint64_t(*size);
            }
        } else if (arg == "--json") {
            json = true;
        } else if (!arg.empty() && arg[0] == '-') {
            return fail("merge-lora", Error{ErrorCode::InvalidInput, "unknown option " + arg, {}});
        } else {
            folders.push_back(arg);
        }
    }
    if (folders.size() != 3)
        return fail("merge-lora", Error{ErrorCode::InvalidInput, "usage: merge-lora BASE ADAPTER OUT", {}});
    LoadOptions options;
    options.deviceMap = "cpu";
    options.adapterDir = folders[1];
    auto model = InferenceModel::load(folders[0], options);
    if (!model)
        return fail("merge-lora", model.error());
    Result<PretrainedWrite> written = makeError(ErrorCode::Internal, "unset");
    try {
        mergeLora((*model)->lm());
        written = writePretrained((*model)->lm(), folders[0], folders[2], dtype, maxShard);
    } catch (const c10::Error &e) {
        return fail("merge-lora", Error{ErrorCode::Failed, e.what_without_backtrace(), {}});
    }
    if (!written)
        return fail("merge-lora", written.error());
    if (json) {
        nlohmann::ordered_json out = {{"schema", "accel.merge-lora"}, {"version", 1},
                                      {"base", folders[0]},           {"adapter", folders[1]},
                                      {"output", folders[2]},         {"adapted_layers", (*model)->adaptedLayers()},
                                      {"dtype", written->dtype},      {"weight_bytes", written->weightBytes},
                                      {"files", written->files}};
        std::cout << out.dump(2) << "\n";
    } else {
        std::cout << "merged " << (*model)->adaptedLayers().size() << " LoRA layer(s) into " << folders[2] << " ("
                  << written->weightBytes << " bytes of " << written->dtype << " weights)\n";
    }
    return 0;
}

} // namespace accel::worker
