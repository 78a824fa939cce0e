// accel generate / accel infer: hand over to accel-worker (libtorch lives there, never in accel).
// The options are checked here (errors and --help without starting torch), then the worker
// beside this program (or $ACCEL_WORKER_PROGRAM) replaces this process with the same request.
#include "app/cli/argparser.h"
#include "app/cli/command.h"
#include "core/common/programs.h"
#include "core/inference/decodebound.h"
#include "core/inference/generator.h"
#include "core/inference/quantizationmethod.h"
#include "core/inference/workeroptions.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace accel::cli {

void addInferenceLoadOptions(ArgParser &parser, bool generate)
{
    parser.addPositional(
        {"model_dir", "a folder with config.json and safetensors weights (gpt2, llama, mistral, qwen2, qwen3, gemma, "
                      "gemma2, phi3, mixtral, qwen2_moe; bitsandbytes, GPTQ or AWQ quantized too)"});
    parser.addValue("device_map", "MAP",
                    "cpu, auto, balanced, balanced_low_0, sequential (planned as accel device-map plans), a JSON "
                    "object of module → cpu | disk | GPU index, or a file holding one (the output of accel "
                    "device-map --json)",
                    "cpu");
    parser.addValue("max_memory", "SPEC", "budgets for a planned --device_map, e.g. cpu=8GiB,disk=100GiB");
    parser.addFlag("gpus_on_cpu", "run the modules the map puts on GPU indices on this machine's CPU (a map planned "
                                  "for another machine, e.g. with accel device-map --env_json); cpu entries stay "
                                  "offloaded as they would be beside a GPU");
    parser.addValue("offload_folder", "DIR", "Accelerate offload folder for the weights mapped to disk");
    parser.addValue("adapter", "DIR",
                    "a LoRA adapter folder in peft's layout (adapter_config.json, adapter_model.safetensors), e.g. "
                    "what a causal_lm run wrote in <output_dir>/adapter");
    std::vector<std::string> dtypes{"float32", "bfloat16", "float16"};
    if (generate)
        dtypes.push_back(inference::kAutoComputeDType);
    parser.addOption({"dtype", "DTYPE",
                      generate ? "compute dtype (default: the checkpoint's; auto: " +
                                     inference::autoComputeDTypeMeaning() + "; the choice and its reason are printed)"
                               : "compute dtype (default: the checkpoint's)",
                      "", 0, false, dtypes});
    parser.addValue("threads", "N", "intra-op threads");
    parser.addOption({"quantization", "METHOD",
                      "quantize the Linear layers on load: bitsandbytes' int8 rows or 4-bit NF4 / FP4 blocks of 64 "
                      "(weights only; activations stay in the compute dtype)",
                      "", 0, false, inference::quantizationMethods()});
    parser.addValue("skip_modules", "A,B",
                    "modules left unquantized, as BnbQuantizationConfig.skip_modules (default: lm_head and the tied "
                    "embeddings; \"\" quantizes every Linear layer)");
    parser.addValue("keep_in_fp32_modules", "A,B",
                    "modules kept in float32 and unquantized, as BnbQuantizationConfig.keep_in_fp32_modules");
    parser.addFlag("json", "print one JSON object (schema accel.generate / accel.infer) at the end");
}

// Rebuilds the worker's command line from the parsed options (dashes, one spelling) and execs it.
int execInferenceWorker(const std::string &command, const ArgParser &parser,
                        const std::vector<std::string> &valueOptions, const std::vector<std::string> &flags)
{
    std::vector<std::string> args{"accel-worker", command, *parser.firstPositional("model_dir")};
    auto dashed = [](std::string name) {
        for (char &c : name)
            if (c == '_')
                c = '-';
        return "--" + name;
    };
    for (const auto &name : valueOptions)
        for (const auto &value : parser.values(name)) {
            args.push_back(dashed(name));
            args.push_back(value);
        }
    for (const auto &name : flags)
        if (parser.isSet(name))
            args.push_back(dashed(name));
    std::string program = workerProgramPath();
    std::vector<char *> raw;
    for (auto &a : args)
        raw.push_back(a.data());
    raw.push_back(nullptr);
    ::execv(program.c_str(), raw.data());
    std::fprintf(stderr, "accel %s: cannot start %s: this build has no libtorch runtime (accel-worker)\n",
                 command.c_str(), program.c_str());
    return 1;
}

namespace {

int runGenerate(int argc, char **argv)
{
    ArgParser parser("accel generate", "Generate text with a gpt2 or Llama-family model (runs accel-worker)");
    addInferenceLoadOptions(parser, true);
    parser.addFlag("pin_threads", "pin each intra-op thread to its own CPU of the allowed set for decode (the CPUs "
                                  "are printed; --json: pinned_cpus)");
    parser.addValue("prompt", "TEXT", "the prompt (needs tokenizer.json in the model folder)");
    parser.addValue("input_ids", "IDS", "the prompt as comma-separated token ids");
    parser.addValue("max_new_tokens", "N", "tokens to generate", "32");
    parser.addFlag("greedy", "always take the most likely token");
    parser.addValue("temperature", "T", "sampling temperature (0 = greedy)", "1.0");
    parser.addValue("top_k", "K", "keep the K most likely tokens");
    parser.addValue("top_p", "P", "keep the smallest set of tokens whose probability reaches P");
    parser.addValue("repetition_penalty", "R", "penalise tokens already present (Transformers' rule)");
    parser.addValue("seed", "S", "seed of the sampler", "0");
    parser.addValue("prompts_file", "FILE",
                    "generate for every prompt of FILE (.txt: one per line; .jsonl: {\"prompt\": ...} or "
                    "{\"input_ids\": [...]} per line); under accel launch --no_python the prompts are split between "
                    "the processes as Accelerate's split_between_processes splits them");
    parser.addValue("output", "FILE.jsonl", "with --prompts_file: one result per prompt, in the file's order");
    parser.addValue("prefill_chunk", "N",
                    "prefill the prompt N tokens at a time through the cache (bounds prefill memory by N instead of "
                    "the prompt's length; default: all at once)");
    parser.addValue("draft", "DIR",
                    "speculative decoding: a small model folder with the same tokenizer proposes tokens and the model "
                    "checks several in one forward (greedy only: the same tokens as without it; transformers' "
                    "assistant_model)");
    parser.addValue("draft_tokens", "N", "tokens the draft proposes per step (transformers' num_assistant_tokens)",
                    std::to_string(inference::DraftModel().tokens));
    parser.addOption({"stop", "TEXT", "stop when the generated text contains TEXT", "", 0, true, {}});
    parser.addOption(
        {"stop_token_id", "ID", "stop at this token (default: the config's eos_token_id)", "", 0, true, {}});
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::printf("%s", parser.helpText().c_str());
            return 0;
        }
        std::fprintf(stderr, "accel generate: %s\n", parser.error().c_str());
        return 2;
    }
    if (int(parser.isSet("prompt")) + int(parser.isSet("input_ids")) + int(parser.isSet("prompts_file")) != 1) {
        std::fprintf(stderr,
                     "accel generate: give exactly one of --prompt TEXT, --input_ids 1,2,3 or --prompts_file FILE\n");
        return 2;
    }
    return execInferenceWorker("generate", parser,
                               {"device_map",
                                "max_memory",
                                "offload_folder",
                                "adapter",
                                "dtype",
                                "threads",
                                "quantization",
                                "skip_modules",
                                "keep_in_fp32_modules",
                                "prompt",
                                "input_ids",
                                "max_new_tokens",
                                "temperature",
                                "top_k",
                                "top_p",
                                "repetition_penalty",
                                "seed",
                                "stop",
                                "stop_token_id",
                                "prefill_chunk",
                                "prompts_file",
                                "output",
                                "draft",
                                "draft_tokens"},
                               {"greedy", "json", "gpus_on_cpu", "pin_threads"});
}

Registrar registrar({"generate", "generate text with a gpt2/llama/mistral/qwen2 model on the libtorch worker",
                     &runGenerate});

} // namespace
} // namespace accel::cli
