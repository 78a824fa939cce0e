// accel merge-weights CHECKPOINT_DIR OUTPUT_DIR: joins a sharded checkpoint folder (what
// SHARDED_STATE_DICT saves, pytorch_model_fsdp_0/: accel's own format or the
// torch.distributed.checkpoint folder Accelerate writes, docs/sharding.md) into one
// OUTPUT_DIR/model.safetensors, like Accelerate's command. No libtorch: pieces are copied as bytes.
#include "app/cli/argparser.h"
#include "app/cli/command.h"
#include "core/plan/shardedfolder.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace {

using namespace accel;

// What --json prints.
constexpr const char *MergeWeightsSchema = "accel.merge-weights";
constexpr int MergeWeightsVersion = 1;

int runMergeWeights(int argc, char **argv)
{
    cli::ArgParser parser("accel merge-weights",
                          "Merge a sharded checkpoint folder (SHARDED_STATE_DICT: pytorch_model_fsdp_0/, or a "
                          "checkpoint folder holding it) into OUTPUT_DIR/model.safetensors, written atomically. "
                          "Reads the torch.distributed.checkpoint folders Accelerate writes (FSDP1 and FSDP2: "
                          ".metadata and __<rank>_0.distcp) and accel's own (index.json). DeepSpeed ZeRO "
                          "checkpoints are refused: run the zero_to_fp32.py DeepSpeed saves with them.");
    parser.addPositional({"CHECKPOINT_DIR", "the sharded folder, or the checkpoint folder that holds it"});
    parser.addPositional({"OUTPUT_DIR", "where model.safetensors is written (created if missing)"});
    parser.addFlag("unsafe_serialization", "write pytorch_model.bin (not supported: needs libtorch)");
    parser.addFlag("remove_checkpoint_dir", "delete CHECKPOINT_DIR after a successful merge");
    parser.addFlag("json", "print a JSON object (schema " +
                               cli::schemaAndVersion(MergeWeightsSchema, MergeWeightsVersion) + ")");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return cli::ExitOk;
        }
        std::fprintf(stderr, "accel merge-weights: %s\n", parser.error().c_str());
        return cli::ExitBadInput;
    }
    if (parser.isSet("unsafe_serialization")) {
        std::fprintf(stderr, "accel merge-weights: --unsafe_serialization (pytorch_model.bin, a Python pickle) is not "
                             "supported; the output is model.safetensors\n");
        return cli::ExitBadInput;
    }
    runtime::MergeOptions options;
    options.removeCheckpointDir = parser.isSet("remove_checkpoint_dir");
    const std::string checkpoint = parser.firstPositional("CHECKPOINT_DIR").value_or("");
    std::string format;
    auto written =
        runtime::mergeWeights(checkpoint, parser.firstPositional("OUTPUT_DIR").value_or(""), options, &format);
    if (!written) {
        std::fprintf(stderr, "accel merge-weights: %s\n", written.error().toString().c_str());
        return exitCodeFor(written.error());
    }
    if (parser.isSet("json")) {
        nlohmann::ordered_json j{
            {"schema", MergeWeightsSchema}, {"version", MergeWeightsVersion}, {"output", *written}, {"format", format}};
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("Merged %s (%s) into %s\n", checkpoint.c_str(), format.c_str(), written->c_str());
    }
    return cli::ExitOk;
}

const cli::Registrar registrar({"merge-weights", "merge a sharded checkpoint into one model.safetensors",
                                runMergeWeights});

} // namespace
