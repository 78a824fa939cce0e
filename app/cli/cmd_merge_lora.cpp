// accel merge-lora BASE ADAPTER OUT: folds a LoRA adapter (peft's layout, as the causal_lm recipe
// writes it) into its base model and writes a Hugging Face folder. The folders are checked here
// (errors and --help without starting torch), then accel-worker does the arithmetic.
#include "app/cli/argparser.h"
#include "app/cli/cmd_launch_support.h"
#include "app/cli/command.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace accel::cli {

namespace {

int runMergeLora(int argc, char **argv)
{
    ArgParser parser("accel merge-lora",
                     "Fold a LoRA adapter into its base model and write a Hugging Face folder (runs accel-worker)");
    parser.addPositional({"BASE", "the base model folder (config.json, safetensors weights, tokenizer files)"});
    parser.addPositional({"ADAPTER", "the adapter folder (adapter_config.json, adapter_model.safetensors)"});
    parser.addPositional({"OUT", "the folder to write (created if missing)"});
    parser.addOption({"dtype",
                      "DTYPE",
                      "dtype of the written weights (default: each base weight's own)",
                      "",
                      0,
                      false,
                      {"float32", "bfloat16", "float16"}});
    parser.addValue("max_shard_size", "SIZE", "safetensors shards of at most SIZE", "50GB");
    parser.addFlag("json", "print one accel.merge-lora JSON object at the end");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::printf("%s", parser.helpText().c_str());
            return ExitOk;
        }
        std::fprintf(stderr, "accel merge-lora: %s\n", parser.error().c_str());
        return ExitBadInput;
    }
    const std::string base = *parser.firstPositional("BASE");
    const std::string adapter = *parser.firstPositional("ADAPTER");
    const std::string out = *parser.firstPositional("OUT");
    std::error_code ec;
    if (!std::filesystem::is_regular_file(base + "/config.json", ec)) {
        std::fprintf(stderr, "accel merge-lora: BASE: %s has no config.json (a Hugging Face model folder)\n",
                     base.c_str());
        return ExitBadInput;
    }
    if (!std::filesystem::is_regular_file(adapter + "/adapter_config.json", ec)) {
        std::fprintf(stderr, "accel merge-lora: ADAPTER: %s has no adapter_config.json (a peft LoRA adapter folder)\n",
                     adapter.c_str());
        return ExitBadInput;
    }
    const std::string program = workerProgramPath();
    if (auto ok = checkWorkerProgram(program); !ok) {
        std::fprintf(stderr, "accel merge-lora: %s\n", ok.error().toString().c_str());
        return ExitFailure;
    }
    std::vector<std::string> args{"accel-worker", "merge-lora", base, adapter, out};
    if (auto dtype = parser.value("dtype")) {
        args.push_back("--dtype");
        args.push_back(*dtype);
    }
    args.push_back("--max-shard-size");
    args.push_back(parser.valueOr("max_shard_size", "50GB"));
    if (parser.isSet("json"))
        args.push_back("--json");
    std::vector<char *> raw;
    for (auto &a : args)
        raw.push_back(a.data());
    raw.push_back(nullptr);
    ::execv(program.c_str(), raw.data());
    std::fprintf(stderr, "accel merge-lora: cannot start %s\n", program.c_str());
    return ExitFailure;
}

Registrar registrar({"merge-lora", "fold a LoRA adapter into its base model (a Hugging Face folder)", &runMergeLora});

} // namespace
} // namespace accel::cli
