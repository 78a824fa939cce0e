// accel infer: one forward pass over token ids, logits written to a safetensors file (by accel-worker).
#include "app/cli/argparser.h"
#include "app/cli/command.h"

#include <cstdio>
#include <string>
#include <vector>

namespace accel::cli {

// cmd_generate.cpp
void addInferenceLoadOptions(ArgParser &parser, bool generate);
int execInferenceWorker(const std::string &command, const ArgParser &parser,
                        const std::vector<std::string> &valueOptions, const std::vector<std::string> &flags);

namespace {

int runInfer(int argc, char **argv)
{
    ArgParser parser("accel infer", "Compute a model's logits for token ids (runs accel-worker)");
    addInferenceLoadOptions(parser, false);
    parser.addValue("input_ids", "IDS", "comma-separated token ids");
    parser.addValue("logits_out", "FILE", "safetensors file to write (tensor \"logits\", float32 [1, tokens, vocab])");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::printf("%s", parser.helpText().c_str());
            return 0;
        }
        std::fprintf(stderr, "accel infer: %s\n", parser.error().c_str());
        return 2;
    }
    if (!parser.isSet("input_ids") || !parser.isSet("logits_out")) {
        std::fprintf(stderr, "accel infer: --input-ids and --logits-out are required\n");
        return 2;
    }
    return execInferenceWorker("infer", parser,
                               {"device_map", "max_memory", "offload_folder", "adapter", "dtype", "threads",
                                "quantization", "skip_modules", "keep_in_fp32_modules", "input_ids", "logits_out"},
                               {"json", "gpus_on_cpu"});
}

Registrar registrar({"infer", "compute logits for token ids with a gpt2/llama model on the libtorch worker",
                     &runInfer});

} // namespace
} // namespace accel::cli
