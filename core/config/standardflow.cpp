// The questions of `accelerate config`, in the order Accelerate asks them.
// Each question names the config key its answer lands in; the few answers that combine into one
// key (distributed type, use_cpu, lists) are turned into config by flowbuilder.cpp.
#include "core/config/questionflow.h"

#include "core/common/fsdpvalues.h"
#include "core/common/text.h"
#include "core/config/configschema.h"

#include <cstdlib>

namespace accel::config {

namespace {

using Condition = std::function<bool(const Answers &)>;

std::string get(const Answers &a, const char *id)
{
    auto it = a.find(id);
    return it == a.end() ? std::string() : it->second;
}
bool yes(const Answers &a, const char *id)
{
    return get(a, id) == "yes";
}
long long num(const Answers &a, const char *id, long long fallback)
{
    const std::string text = get(a, id);
    return text.empty() ? fallback : std::atoll(text.c_str());
}

bool sage(const Answers &a)
{
    return get(a, "compute_environment") == toString(ComputeEnvironment::AmazonSageMaker);
}
bool local(const Answers &a)
{
    return !sage(a);
}
std::string machine(const Answers &a)
{
    return local(a) ? get(a, "machine_type") : std::string();
}
bool multi(const Answers &a)
{
    return machine(a).rfind("MULTI_", 0) == 0;
}
bool gpuLike(const Answers &a)
{
    return multi(a) && machine(a) != "MULTI_CPU";
}
bool xla(const Answers &a)
{
    return machine(a) == "XLA";
}
bool multiNode(const Answers &a)
{
    return multi(a) && num(a, "num_machines", 1) > 1;
}
bool deepspeed(const Answers &a)
{
    return yes(a, "use_deepspeed");
}
bool dsFile(const Answers &a)
{
    return deepspeed(a) && yes(a, "deepspeed_use_config_file");
}
bool dsInline(const Answers &a)
{
    return deepspeed(a) && !yes(a, "deepspeed_use_config_file");
}
long long zeroStage(const Answers &a)
{
    return num(a, "zero_stage", 2);
}
bool fsdp(const Answers &a)
{
    return yes(a, "use_fsdp");
}
bool fsdp1(const Answers &a)
{
    return fsdp(a) && get(a, "fsdp_version") == "1";
}
bool fsdp2(const Answers &a)
{
    return fsdp(a) && get(a, "fsdp_version") == "2";
}
bool megatron(const Answers &a)
{
    return yes(a, "use_megatron_lm");
}
bool fp8(const Answers &a)
{
    return local(a) && get(a, "mixed_precision") == "fp8";
}
bool fp8Backend(const Answers &a, const char *backend)
{
    return fp8(a) && get(a, "fp8_backend") == backend;
}
bool sageDistributed(const Answers &a)
{
    return sage(a) && get(a, "sagemaker_distributed_type") != "NO";
}

Question make(const char *id, QuestionKind kind, const char *prompt, std::string defaultAnswer, Condition condition,
              const char *key)
{
    Question q;
    q.id = id;
    q.kind = kind;
    q.prompt = prompt;
    q.defaultAnswer = std::move(defaultAnswer);
    q.condition = std::move(condition);
    q.configKey = key ? key : "";
    return q;
}

Question menu(const char *id, const char *prompt, std::vector<Choice> choices, std::string defaultAnswer,
              Condition condition, const char *key = nullptr)
{
    Question q = make(id, QuestionKind::Menu, prompt, std::move(defaultAnswer), std::move(condition), key);
    q.choices = std::move(choices);
    return q;
}

Question yesNo(const char *id, const char *prompt, bool defaultYes, Condition condition, const char *key = nullptr)
{
    return make(id, QuestionKind::YesNo, prompt, defaultYes ? "yes" : "no", std::move(condition), key);
}

Question integer(const char *id, const char *prompt, std::string defaultAnswer, Condition condition,
                 const char *key = nullptr, long long minimum = 1)
{
    Question q = make(id, QuestionKind::Integer, prompt, std::move(defaultAnswer), std::move(condition), key);
    q.required = true;
    q.check = [minimum](const std::string &answer, const Answers &) {
        return std::atoll(answer.c_str()) < minimum ? "expected a whole number >= " + std::to_string(minimum)
                                                    : std::string();
    };
    return q;
}

Question text(const char *id, const char *prompt, std::string defaultAnswer, Condition condition,
              const char *key = nullptr, bool required = false, QuestionKind kind = QuestionKind::Text)
{
    Question q = make(id, kind, prompt, std::move(defaultAnswer), std::move(condition), key);
    q.required = required;
    return q;
}

Question path(const char *id, const char *prompt, std::string defaultAnswer, Condition condition,
              const char *key = nullptr)
{
    return text(id, prompt, std::move(defaultAnswer), std::move(condition), key, true, QuestionKind::Path);
}

std::vector<Choice> plainChoices(std::initializer_list<const char *> values)
{
    std::vector<Choice> choices;
    for (const char *value : values)
        choices.push_back({value, value});
    return choices;
}

// A list the config schema declares (core/config/configschema.h), offered as it is written.
std::vector<Choice> plainChoices(const std::vector<std::string> &values)
{
    std::vector<Choice> choices;
    for (const std::string &value : values)
        choices.push_back({value, value});
    return choices;
}

// The values the schema allows for the key the answer lands in.
std::vector<Choice> schemaChoices(const char *dottedKey)
{
    return plainChoices(schema::allowedValues(dottedKey));
}

bool startsWith(const std::string &text, const char *prefix)
{
    return text.rfind(prefix, 0) == 0;
}

// The wizard page of each question (standardSections() lists the pages in order). The machine
// page also holds the run options that only depend on the machine type (debug, CPU only,
// mpirun), so the multi-node page can follow it directly; the processes page comes after
// DeepSpeed/FSDP/Megatron-LM because its checks depend on them.
void assignSections(std::vector<Question> &questions)
{
    for (Question &q : questions) {
        const std::string &id = q.id;
        if (id == "compute_environment" || id == "machine_type" || id == "debug" || id == "use_cpu" ||
            startsWith(id, "mpirun") || id == "use_mpirun")
            q.section = "machine";
        else if (startsWith(id, "sagemaker_"))
            q.section = "sagemaker";
        else if (id == "num_machines" || id == "machine_rank" || startsWith(id, "main_process_") ||
                 id == "same_network" || id == "rdzv_backend")
            q.section = "multi_node";
        else if (startsWith(id, "dynamo_") || id == "use_dynamo")
            q.section = "dynamo";
        else if (startsWith(id, "fsdp") || id == "use_fsdp" || startsWith(id, "parallelism_config") ||
                 id == "use_parallelism_config")
            q.section = "fsdp";
        else if (startsWith(id, "megatron_lm") || id == "use_megatron_lm")
            q.section = "megatron";
        else if (id == "num_processes" || id == "gpu_ids" || id == "enable_cpu_affinity")
            q.section = "processes";
        else if (startsWith(id, "tpu_") || id == "main_training_function")
            q.section = "tpu";
        else if (id == "mixed_precision")
            q.section = "precision";
        else if (startsWith(id, "fp8_"))
            q.section = "fp8";
        else
            q.section = "deepspeed"; // use_deepspeed, zero*, offload*, gradient*, deepspeed_*
    }
}

// SageMaker: where and as whom (credentials are left to the AWS tools).
void addSageMakerQuestions(std::vector<Question> &q)
{
    q.push_back(text("sagemaker_profile", "Which AWS profile should be used (empty: the default credentials)?", "",
                     sage, "profile"));
    q.push_back(text("sagemaker_region", "Which AWS region?", "us-east-1", sage, "region"));
    q.push_back(text("sagemaker_iam_role", "Which IAM role should SageMaker use?", "", sage, "iam_role_name", true));
    q.push_back(
        text("sagemaker_image_uri", "Custom Docker image URI (empty: the default image)?", "", sage, "image_uri"));
    q.push_back(text("sagemaker_inputs_file", "File with SageMaker input channels (empty: none)?", "", sage,
                     "sagemaker_inputs_file", false, QuestionKind::Path));
    q.push_back(text("sagemaker_metrics_file", "File with SageMaker metric definitions (empty: none)?", "", sage,
                     "sagemaker_metrics_file", false, QuestionKind::Path));
    q.push_back(menu("sagemaker_distributed_type", "Which type of distributed training?",
                     {{"NO", "No distributed training"}, {"DATA_PARALLEL", "Data parallelism"}}, "NO", sage));
}

// This machine: what kind of run, on how many machines.
void addMachineQuestions(std::vector<Question> &q)
{
    q.push_back(menu("machine_type", "Which type of machine are you using?",
                     {{"NO", "No distributed training"},
                      {"MULTI_CPU", "multi-CPU"},
                      {"MULTI_XPU", "multi-XPU"},
                      {"MULTI_HPU", "multi-HPU"},
                      {"MULTI_GPU", "multi-GPU"},
                      {"MULTI_NPU", "multi-NPU"},
                      {"MULTI_MLU", "multi-MLU"},
                      {"MULTI_SDAA", "multi-SDAA"},
                      {"MULTI_MUSA", "multi-MUSA"},
                      {"MULTI_NEURON", "multi-NEURON"},
                      {"XLA", "TPU"}},
                     "NO", local));
    q.push_back(integer("num_machines", "How many machines will you use (more than 1 for multi-node training)?", "1",
                        multi, "num_machines"));
    {
        Question rank = integer("machine_rank", "What is the rank of this machine?", "0", multiNode, "machine_rank", 0);
        rank.check = [](const std::string &answer, const Answers &a) {
            const long long value = std::atoll(answer.c_str());
            const long long machines = num(a, "num_machines", 1);
            return value < 0 || value >= machines ? "expected a rank from 0 to " + std::to_string(machines - 1)
                                                  : std::string();
        };
        q.push_back(rank);
    }
    q.push_back(text("main_process_ip", "What is the IP address of the machine that will host the main process?", "",
                     multiNode, "main_process_ip", true));
    {
        Question port =
            integer("main_process_port", "What is the port you will use to communicate with the main process?", "",
                    multiNode, "main_process_port", 0);
        port.check = [](const std::string &answer, const Answers &) {
            const long long value = std::atoll(answer.c_str());
            return value < 0 || value > 65535 ? std::string("expected a port from 0 to 65535") : std::string();
        };
        q.push_back(port);
    }
    q.push_back(
        yesNo("same_network", "Are all the machines on the same local network?", true, multiNode, "same_network"));
    q.push_back(menu(
        "rdzv_backend", "What rendezvous backend will you use?", schemaChoices("rdzv_backend"), "static",
        [](const Answers &a) { return multiNode(a) && !yes(a, "same_network"); }, "rdzv_backend"));
    q.push_back(yesNo(
        "debug", "Should distributed operations be checked for errors while running (slower, avoids silent hangs)?",
        false, [](const Answers &a) { return multi(a); }, "debug"));
    q.push_back(yesNo("use_cpu", "Do you want to run your training on CPU only (even if an accelerator is available)?",
                      false, [](const Answers &a) { return machine(a) == "NO"; }));
    q.push_back(yesNo("use_mpirun", "Do you want accelerate to launch mpirun?", false,
                      [](const Answers &a) { return machine(a) == "MULTI_CPU"; }));
    q.push_back(path(
        "mpirun_hostfile", "Where is the hostfile for mpirun?", "~/hostfile",
        [](const Answers &a) { return yes(a, "use_mpirun"); }, "mpirun_config.mpirun_hostfile"));
}

// torch dynamo.
void addDynamoQuestions(std::vector<Question> &q)
{
    const Condition dynamoAsked = [](const Answers &a) { return sage(a) || (local(a) && !xla(a)); };
    q.push_back(yesNo("use_dynamo", "Do you wish to optimize your script with torch dynamo?", false, dynamoAsked));
    const Condition dynamo = [](const Answers &a) { return yes(a, "use_dynamo"); };
    {
        std::vector<Choice> backends;
        for (const std::string &name : schema::valuesIn(schema::dynamoBackendTable(), schema::Asked))
            backends.push_back({name, text::lower(name)});
        q.push_back(menu("dynamo_backend", "Which dynamo backend would you like to use?", backends, "INDUCTOR", dynamo,
                         "dynamo_config.dynamo_backend"));
    }
    q.push_back(
        yesNo("dynamo_customize", "Do you want to customize the defaults sent to torch.compile?", false, dynamo));
    const Condition customized = [](const Answers &a) { return yes(a, "use_dynamo") && yes(a, "dynamo_customize"); };
    q.push_back(menu("dynamo_mode", "Which mode do you want to use?",
                     plainChoices(schema::valuesIn(schema::dynamoModeTable(), schema::Asked)), "default", customized,
                     "dynamo_config.dynamo_mode"));
    q.push_back(yesNo("dynamo_use_fullgraph",
                      "Do you want the fullgraph mode or is it ok to break the model into several subgraphs?", false,
                      customized, "dynamo_config.dynamo_use_fullgraph"));
    q.push_back(yesNo("dynamo_use_dynamic", "Do you want to enable dynamic shape tracing?", false, customized,
                      "dynamo_config.dynamo_use_dynamic"));
    q.push_back(yesNo("dynamo_use_regional_compilation", "Do you want to enable regional compilation?", false,
                      customized, "dynamo_config.dynamo_use_regional_compilation"));
}

// SageMaker machines.
void addSageMakerMachineQuestions(std::vector<Question> &q)
{
    q.push_back(menu("sagemaker_ec2_instance_type", "Which EC2 instance type do you want to use for your training?",
                     plainChoices({"ml.p3.16xlarge", "ml.p3dn.24xlarge", "ml.p4dn.24xlarge"}), "ml.p3.16xlarge",
                     sageDistributed, "ec2_instance_type"));
    q.push_back(text(
        "sagemaker_ec2_instance_type_single", "Which EC2 instance type do you want to use for your training?",
        "ml.p3.2xlarge", [](const Answers &a) { return sage(a) && !sageDistributed(a); }, "ec2_instance_type", true));
    q.push_back(yesNo("sagemaker_debug", "Should distributed operations be checked for errors while running?", false,
                      sageDistributed, "debug"));
    q.push_back(integer("sagemaker_num_machines", "How many machines do you want to use?", "1", sageDistributed,
                        "num_machines"));
}

// DeepSpeed.
void addDeepSpeedQuestions(std::vector<Question> &q)
{
    {
        Question use = yesNo("use_deepspeed", "Do you want to use DeepSpeed?", false,
                             [](const Answers &a) { return (machine(a) == "NO" && !yes(a, "use_cpu")) || gpuLike(a); });
        use.check = [](const std::string &answer, const Answers &a) {
            return answer == "yes" && machine(a) == "MULTI_NEURON"
                       ? std::string("DeepSpeed is not supported on MULTI_NEURON")
                       : std::string();
        };
        q.push_back(use);
    }
    q.push_back(yesNo("deepspeed_use_config_file", "Do you want to specify a json file to a DeepSpeed config?", false,
                      deepspeed));
    q.push_back(path("deepspeed_config_file", "Enter the path to the DeepSpeed config file:", "", dsFile,
                     "deepspeed_config.deepspeed_config_file"));
    q.push_back(menu("zero_stage", "What should be your DeepSpeed's ZeRO optimization stage?",
                     schemaChoices("deepspeed_config.zero_stage"), "2", dsInline, "deepspeed_config.zero_stage"));
    const Condition offload = [](const Answers &a) { return dsInline(a) && zeroStage(a) >= 2; };
    q.push_back(menu("offload_optimizer_device", "Where to offload optimizer states?",
                     schemaChoices("deepspeed_config.offload_optimizer_device"), "none", offload,
                     "deepspeed_config.offload_optimizer_device"));
    q.push_back(menu("offload_param_device", "Where to offload parameters?",
                     schemaChoices("deepspeed_config.offload_param_device"), "none", offload,
                     "deepspeed_config.offload_param_device"));
    q.push_back(path(
        "offload_optimizer_nvme_path", "Nvme path for optimizer states offloading:", "/nvme",
        [](const Answers &a) { return dsInline(a) && get(a, "offload_optimizer_device") == "nvme"; },
        "deepspeed_config.offload_optimizer_nvme_path"));
    q.push_back(path(
        "offload_param_nvme_path", "Nvme path for parameters offloading:", "/nvme",
        [](const Answers &a) { return dsInline(a) && get(a, "offload_param_device") == "nvme"; },
        "deepspeed_config.offload_param_nvme_path"));
    q.push_back(integer("gradient_accumulation_steps",
                        "How many gradient accumulation steps are you passing in your script?", "1", dsInline,
                        "deepspeed_config.gradient_accumulation_steps"));
    q.push_back(yesNo("use_gradient_clipping", "Do you want to use gradient clipping?", false, dsInline));
    q.push_back(make(
        "gradient_clipping", QuestionKind::Float, "What is the gradient clipping value?", "1.0",
        [](const Answers &a) { return dsInline(a) && yes(a, "use_gradient_clipping"); },
        "deepspeed_config.gradient_clipping"));
    q.push_back(yesNo(
        "zero3_save_16bit_model", "Do you want to save 16-bit model weights when using ZeRO Stage-3?", false,
        [](const Answers &a) { return dsInline(a) && zeroStage(a) == 3; }, "deepspeed_config.zero3_save_16bit_model"));
    q.push_back(
        yesNo("zero3_init_flag",
              "Do you want to enable deepspeed.zero.Init when using ZeRO Stage-3 for constructing massive models?",
              false, deepspeed, "deepspeed_config.zero3_init_flag"));
    q.push_back(yesNo("deepspeed_moe", "Do you want to enable Mixture-of-Experts training (MoE)?", false, deepspeed));
    q.push_back(text(
        "deepspeed_moe_layer_cls_names",
        "Which transformer layer classes are MoE layers (comma-separated, e.g. MixtralSparseMoeBlock)?", "",
        [](const Answers &a) { return deepspeed(a) && yes(a, "deepspeed_moe"); },
        "deepspeed_config.deepspeed_moe_layer_cls_names", true));
    const Condition dsMultiNode = [](const Answers &a) { return deepspeed(a) && multiNode(a); };
    q.push_back(menu("deepspeed_multinode_launcher", "Which Type of launcher do you want to use?",
                     schemaChoices("deepspeed_config.deepspeed_multinode_launcher"), "pdsh", dsMultiNode,
                     "deepspeed_config.deepspeed_multinode_launcher"));
    const Condition dsRunner = [](const Answers &a) {
        return deepspeed(a) && multiNode(a) && get(a, "deepspeed_multinode_launcher") != "standard";
    };
    q.push_back(path("deepspeed_hostfile",
                     "DeepSpeed configures multi-node compute resources with a hostfile. Where is it?", "", dsRunner,
                     "deepspeed_config.deepspeed_hostfile"));
    q.push_back(
        yesNo("deepspeed_use_exclusion_filter", "Do you want to specify an exclusion filter string?", false, dsRunner));
    q.push_back(text(
        "deepspeed_exclusion_filter", "DeepSpeed exclusion filter string:", "",
        [=](const Answers &a) { return dsRunner(a) && yes(a, "deepspeed_use_exclusion_filter"); },
        "deepspeed_config.deepspeed_exclusion_filter", true));
    q.push_back(
        yesNo("deepspeed_use_inclusion_filter", "Do you want to specify an inclusion filter string?", false, dsRunner));
    q.push_back(text(
        "deepspeed_inclusion_filter", "DeepSpeed inclusion filter string:", "",
        [=](const Answers &a) { return dsRunner(a) && yes(a, "deepspeed_use_inclusion_filter"); },
        "deepspeed_config.deepspeed_inclusion_filter", true));
}

// FSDP.
void addFsdpQuestions(std::vector<Question> &q)
{
    q.push_back(yesNo("use_fsdp", "Do you want to use FullyShardedDataParallel?", false,
                      [](const Answers &a) { return gpuLike(a) && machine(a) != "MULTI_NEURON" && !deepspeed(a); }));
    q.push_back(menu("fsdp_version", "What should be your FSDP version?", schemaChoices("fsdp_config.fsdp_version"),
                     "2", fsdp, "fsdp_config.fsdp_version"));
    q.push_back(menu("fsdp_sharding_strategy", "What should be your sharding strategy?",
                     plainChoices(schema::fsdpShardingStrategies()), fsdp::kFullShard, fsdp1,
                     "fsdp_config.fsdp_reshard_after_forward"));
    q.push_back(yesNo("fsdp_reshard_after_forward", "Do you want to enable resharding after forward?", true, fsdp2,
                      "fsdp_config.fsdp_reshard_after_forward"));
    q.push_back(yesNo("fsdp_offload_params", "Do you want to offload parameters and gradients to CPU?", false, fsdp,
                      "fsdp_config.fsdp_offload_params"));
    q.push_back(menu("fsdp_auto_wrap_policy", "What should be your auto wrap policy?",
                     plainChoices(schema::fsdpAutoWrapPolicies()), fsdp::kTransformerBasedWrap, fsdp,
                     "fsdp_config.fsdp_auto_wrap_policy"));
    const Condition transformerWrap = [](const Answers &a) {
        return fsdp(a) && get(a, "fsdp_auto_wrap_policy") == fsdp::kTransformerBasedWrap;
    };
    q.push_back(yesNo("fsdp_use_no_split_modules",
                      "Do you want to use the model's _no_split_modules to wrap (Transformers models only)?", false,
                      transformerWrap));
    q.push_back(text(
        "fsdp_transformer_layer_cls_to_wrap",
        "Specify the comma-separated list of transformer layer class names to wrap:", "",
        [=](const Answers &a) { return transformerWrap(a) && !yes(a, "fsdp_use_no_split_modules"); },
        "fsdp_config.fsdp_transformer_layer_cls_to_wrap", true));
    q.push_back(integer(
        "fsdp_min_num_params", "What should be your FSDP's minimum number of parameters for default auto wrapping?",
        fsdp::kDefaultMinNumParams,
        [](const Answers &a) { return fsdp(a) && get(a, "fsdp_auto_wrap_policy") == fsdp::kSizeBasedWrap; },
        "fsdp_config.fsdp_min_num_params", 0));
    q.push_back(menu("fsdp_backward_prefetch", "What should be your FSDP's backward prefetch policy?",
                     plainChoices(schema::fsdpBackwardPrefetchModes()), fsdp::kBackwardPre, fsdp1,
                     "fsdp_config.fsdp_backward_prefetch"));
    q.push_back(menu("fsdp1_state_dict_type", "What should be your FSDP's state dict type?",
                     plainChoices(schema::fsdpStateDictTypes()), fsdp::kFullStateDict, fsdp1,
                     "fsdp_config.fsdp_state_dict_type"));
    q.push_back(menu("fsdp2_state_dict_type", "What should be your FSDP's state dict type?",
                     plainChoices(schema::fsdp2StateDictTypes()), fsdp::kShardedStateDict, fsdp2,
                     "fsdp_config.fsdp_state_dict_type"));
    q.push_back(yesNo("fsdp_forward_prefetch", "Do you want to enable FSDP's forward prefetch policy?", false, fsdp1,
                      "fsdp_config.fsdp_forward_prefetch"));
    q.push_back(yesNo("fsdp_use_orig_params", "Do you want to enable FSDP's use_orig_params feature?", true, fsdp1,
                      "fsdp_config.fsdp_use_orig_params"));
    q.push_back(yesNo("fsdp_cpu_ram_efficient_loading", "Do you want to enable CPU RAM efficient model loading?", true,
                      fsdp, "fsdp_config.fsdp_cpu_ram_efficient_loading"));
    q.push_back(yesNo("fsdp_sync_module_states",
                      "Do you want each individually wrapped FSDP unit to broadcast module parameters from rank 0?",
                      true, [](const Answers &a) { return fsdp1(a) && !yes(a, "fsdp_cpu_ram_efficient_loading"); }));
    q.push_back(yesNo("fsdp_activation_checkpointing", "Do you want to enable activation checkpointing?", false, fsdp,
                      "fsdp_config.fsdp_activation_checkpointing"));
    q.push_back(yesNo("use_parallelism_config", "Do you want to use the parallelism config?", false, fsdp2));
    const Condition parallel = [](const Answers &a) { return fsdp2(a) && yes(a, "use_parallelism_config"); };
    q.push_back(integer("parallelism_config_dp_replicate_size", "What is the data parallelism replicate size?", "1",
                        parallel, "parallelism_config.parallelism_config_dp_replicate_size"));
    q.push_back(integer("parallelism_config_dp_shard_size", "What is the FSDP shard size?", "1", parallel,
                        "parallelism_config.parallelism_config_dp_shard_size"));
    q.push_back(integer("parallelism_config_tp_size", "What is the tensor parallelism size?", "1", parallel,
                        "parallelism_config.parallelism_config_tp_size"));
    q.push_back(integer("parallelism_config_cp_size", "What is the context parallelism size?", "1", parallel,
                        "parallelism_config.parallelism_config_cp_size"));
    q.push_back(menu(
        "parallelism_config_cp_comm_strategy", "What is the compute parallelism communication strategy?",
        schemaChoices("parallelism_config.parallelism_config_cp_comm_strategy"), "allgather",
        [=](const Answers &a) { return parallel(a) && num(a, "parallelism_config_cp_size", 1) > 1; },
        "parallelism_config.parallelism_config_cp_comm_strategy"));
}

// Megatron-LM (multi-GPU only).
void addMegatronQuestions(std::vector<Question> &q)
{
    q.push_back(yesNo("use_megatron_lm", "Do you want to use Megatron-LM?", false,
                      [](const Answers &a) { return machine(a) == "MULTI_GPU" && !deepspeed(a) && !fsdp(a); }));
    q.push_back(integer("megatron_lm_tp_degree", "What is the Tensor Parallelism degree/size?", "1", megatron,
                        "megatron_lm_config.megatron_lm_tp_degree"));
    q.push_back(yesNo(
        "megatron_lm_sequence_parallelism", "Do you want to enable Sequence Parallelism?", true,
        [](const Answers &a) { return megatron(a) && num(a, "megatron_lm_tp_degree", 1) > 1; },
        "megatron_lm_config.megatron_lm_sequence_parallelism"));
    q.push_back(integer("megatron_lm_pp_degree", "What is the Pipeline Parallelism degree/size?", "1", megatron,
                        "megatron_lm_config.megatron_lm_pp_degree"));
    q.push_back(integer(
        "megatron_lm_num_micro_batches", "What is the number of micro-batches?", "1",
        [](const Answers &a) { return megatron(a) && num(a, "megatron_lm_pp_degree", 1) > 1; },
        "megatron_lm_config.megatron_lm_num_micro_batches"));
    q.push_back(yesNo("megatron_lm_recompute_activations", "Do you want to enable selective activation recomputation?",
                      true, megatron, "megatron_lm_config.megatron_lm_recompute_activations"));
    q.push_back(yesNo("megatron_lm_use_distributed_optimizer",
                      "Do you want to use distributed optimizer which shards optimizer state and gradients across data "
                      "parallel ranks?",
                      true, megatron, "megatron_lm_config.megatron_lm_use_distributed_optimizer"));
    q.push_back(make("megatron_lm_gradient_clipping", QuestionKind::Float,
                     "What is the gradient clipping value based on global L2 Norm (0 to disable)?", "1.0", megatron,
                     "megatron_lm_config.megatron_lm_gradient_clipping"));
}

// How many processes, on which devices.
void addProcessQuestions(std::vector<Question> &q)
{
    {
        Question processes = integer(
            "num_processes", "How many GPU(s) should be used for distributed training?", "1",
            [](const Answers &a) { return (local(a) && machine(a) != "NO") || deepspeed(a); }, "num_processes");
        processes.dynamicPrompt = [](const Answers &a) -> std::string {
            if (machine(a) == "MULTI_CPU")
                return "How many processes should be used for distributed training (in total, over all machines)?";
            if (xla(a))
                return "How many TPU cores should be used for distributed training?";
            return "How many GPU(s) should be used for distributed training (in total, over all machines)?";
        };
        processes.check = [](const std::string &answer, const Answers &a) {
            const long long value = std::atoll(answer.c_str());
            if (value < 1)
                return std::string("expected a whole number >= 1");
            if (gpuLike(a) && !deepspeed(a) && !fsdp(a) && !megatron(a) && num(a, "num_machines", 1) == 1 && value == 1)
                return "a " + machine(a) +
                       " run on one machine needs more than one process; choose 'No distributed training' for one "
                       "device";
            return std::string();
        };
        q.push_back(processes);
    }
    q.push_back(text(
        "gpu_ids", "What GPU(s) (by id) should be used for training on this machine as a comma-separated list?", "all",
        [](const Answers &a) {
            // Asked when the final type is a multi-accelerator one or NO on an accelerator, not for
            // DeepSpeed/FSDP/Megatron-LM runs.
            if (deepspeed(a) || fsdp(a) || megatron(a))
                return false;
            return gpuLike(a) || (machine(a) == "NO" && !yes(a, "use_cpu"));
        },
        "gpu_ids"));
    q.push_back(yesNo(
        "enable_cpu_affinity",
        "Would you like to enable numa efficiency (currently only supported on NVIDIA hardware)?", false,
        [](const Answers &a) {
            return ((machine(a) == "NO" && !yes(a, "use_cpu") && !deepspeed(a)) ||
                    (machine(a) == "MULTI_GPU" && !fsdp(a) && !deepspeed(a) && !megatron(a)));
        },
        "enable_cpu_affinity"));
}

// TPU.
void addTpuQuestions(std::vector<Question> &q)
{
    q.push_back(text("main_training_function",
                     "What is the name of the function in your script that should be launched in all parallel scripts?",
                     "main", xla, "main_training_function", true));
    q.push_back(yesNo("tpu_use_cluster", "Are you using a TPU cluster?", false, xla, "tpu_use_cluster"));
    const Condition pod = [](const Answers &a) { return xla(a) && yes(a, "tpu_use_cluster"); };
    q.push_back(text("tpu_name", "What is the name of your TPU cluster?", "", pod, "tpu_name", true));
    q.push_back(text("tpu_zone", "What is the zone of your TPU cluster?", "", pod, "tpu_zone", true));
    q.push_back(
        yesNo("tpu_use_sudo", "To run a python script in a TPU pod, should sudo be used?", false, pod, "tpu_use_sudo"));
    q.push_back(yesNo("tpu_use_command_file",
                      "Do you have code inside a bash file that should run when the pod starts?", false, pod));
    q.push_back(path(
        "tpu_command_file", "What is the path to your bash file?", "",
        [=](const Answers &a) { return pod(a) && yes(a, "tpu_use_command_file"); }, "command_file"));
    q.push_back(text("tpu_commands", "Which commands should run when the pod starts (separated by ';')?", "",
                     [=](const Answers &a) { return pod(a) && !yes(a, "tpu_use_command_file"); }));
    q.push_back(text("tpu_vm", "Which TPU VMs should the commands run on (comma-separated, empty: all)?", "", pod));
    q.push_back(
        text("tpu_env", "Which environment variables should be set on the pod (KEY=VALUE, comma-separated)?", "", pod));
}

// FP8 backends, shown lower case as Accelerate's questionnaire does.
std::vector<Choice> fp8Backends()
{
    std::vector<Choice> choices;
    for (const std::string &name : schema::allowedValues("fp8_config.backend"))
        choices.push_back({name, text::lower(name)});
    return choices;
}

// Precision and FP8.
void addPrecisionQuestions(std::vector<Question> &q)
{
    q.push_back(menu("mixed_precision", "Do you wish to use mixed precision?",
                     plainChoices(schema::mixedPrecisionNames()), "no",
                     [](const Answers &a) { return sage(a) || (!xla(a) && !dsFile(a)); }));
    q.push_back(
        menu("fp8_backend", "Which FP8 backend do you want to use?", fp8Backends(), "AO", fp8, "fp8_config.backend"));
    const Condition te = [](const Answers &a) { return fp8Backend(a, "TE"); };
    q.push_back(yesNo("fp8_use_autocast_during_eval", "Do you want to use FP8 autocast during evaluation mode?", false,
                      te, "fp8_config.use_autocast_during_eval"));
    q.push_back(
        integer("fp8_margin", "What margin should be used for gradient scaling?", "0", te, "fp8_config.margin", 0));
    q.push_back(integer("fp8_interval", "What interval should be used for how often the scaling factor is recomputed?",
                        "1", te, "fp8_config.interval"));
    q.push_back(menu("fp8_format", "Which weight format should be used?", schemaChoices("fp8_config.fp8_format"),
                     "HYBRID", te, "fp8_config.fp8_format"));
    q.push_back(integer("fp8_amax_history_length",
                        "What length of history should be used for the amax scaling factor computation?", "1024", te,
                        "fp8_config.amax_history_length"));
    q.push_back(
        menu("fp8_amax_compute_algorithm", "Which algorithm should be used for the amax scaling factor computation?",
             schemaChoices("fp8_config.amax_compute_algorithm"), "max", te, "fp8_config.amax_compute_algorithm"));
    q.push_back(yesNo("fp8_override_linear_precision",
                      "Do you want to execute fprop/dgrad/wgrad GEMMS in higher precision instead of FP8?", false, te));
    const Condition overrides = [=](const Answers &a) { return te(a) && yes(a, "fp8_override_linear_precision"); };
    q.push_back(yesNo("fp8_override_fprop", "Should fprop be executed in higher precision?", false, overrides));
    q.push_back(yesNo("fp8_override_dgrad", "Should dgrad be executed in higher precision?", false, overrides));
    q.push_back(yesNo("fp8_override_wgrad", "Should wgrad be executed in higher precision?", false, overrides));
    q.push_back(menu(
        "fp8_optimization_level", "What optimization level should be used?",
        schemaChoices("fp8_config.optimization_level"), "O2", [](const Answers &a) { return fp8Backend(a, "MSAMP"); },
        "fp8_config.optimization_level"));
    const Condition ao = [](const Answers &a) { return fp8Backend(a, "AO"); };
    q.push_back(yesNo("fp8_enable_fsdp_float8_all_gather", "Do you want to enable FSDP2 float8 all-gather?", true, ao,
                      "fp8_config.enable_fsdp_float8_all_gather"));
    q.push_back(yesNo("fp8_pad_inner_dim", "Do you want to pad the inner dimension of the weight matrix?", true, ao,
                      "fp8_config.pad_inner_dim"));
}

std::vector<Question> standardQuestions()
{
    std::vector<Question> q;
    q.push_back(menu("compute_environment", "In which compute environment are you running?",
                     {{toString(ComputeEnvironment::LocalMachine), "This machine"},
                      {toString(ComputeEnvironment::AmazonSageMaker), "AWS (Amazon SageMaker)"}},
                     toString(ComputeEnvironment::LocalMachine), {}));
    addSageMakerQuestions(q);
    addMachineQuestions(q);
    addDynamoQuestions(q);
    addSageMakerMachineQuestions(q);
    addDeepSpeedQuestions(q);
    addFsdpQuestions(q);
    addMegatronQuestions(q);
    addProcessQuestions(q);
    addTpuQuestions(q);
    addPrecisionQuestions(q);
    assignSections(q);
    return q;
}

std::vector<Section> standardSections()
{
    return {{"machine", "Compute environment and machine"},
            {"sagemaker", "Amazon SageMaker"},
            {"multi_node", "Multi-node"},
            {"dynamo", "torch dynamo"},
            {"deepspeed", "DeepSpeed"},
            {"fsdp", "Fully sharded data parallel (FSDP)"},
            {"megatron", "Megatron-LM"},
            {"processes", "Processes and devices"},
            {"tpu", "TPU"},
            {"precision", "Mixed precision"},
            {"fp8", "FP8"}};
}

} // namespace

const QuestionFlow &QuestionFlow::standard()
{
    static const QuestionFlow flow(standardQuestions(), standardSections());
    return flow;
}

} // namespace accel::config
