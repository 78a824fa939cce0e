// Answers of the question flow -> ClusterConfig, the way Accelerate's questionnaire assembles
// its config: answers land in the key their question names; the machine type, DeepSpeed/FSDP/
// Megatron choices and CPU answers combine into distributed_type and use_cpu.
#include "core/common/text.h"
#include "core/config/configschema.h"
#include "core/config/questionflow.h"

#include <cstdlib>

namespace accel::config {

namespace {

// Assigns one answer to the field named `key` (within a block when `block` is set).
class Assigner {
public:
    Assigner(std::string key, std::string answer) : m_key(std::move(key)), m_answer(std::move(answer)) {}
    bool assigned = false;

    void flag(const char *key, std::optional<bool> &out)
    {
        if (match(key))
            out = m_answer == "yes" || m_answer == "true";
    }
    void integer(const char *key, std::optional<std::int64_t> &out, schema::Range)
    {
        if (match(key))
            out = std::atoll(m_answer.c_str());
    }
    void number(const char *key, std::optional<double> &out)
    {
        if (match(key))
            out = std::strtod(m_answer.c_str(), nullptr);
    }
    void text(const char *key, std::optional<std::string> &out, const schema::Choices &)
    {
        if (match(key))
            out = m_answer;
    }
    void boolOrText(const char *key, std::optional<BoolOrString> &out, const schema::Choices &)
    {
        if (!match(key))
            return;
        if (m_answer == "yes" || m_answer == "no")
            out = BoolOrString(m_answer == "yes");
        else
            out = BoolOrString(m_answer);
    }
    void textList(const char *key, std::optional<std::vector<std::string>> &out)
    {
        if (match(key))
            out = std::vector<std::string>{m_answer};
    }
    void flagList(const char *, std::optional<std::vector<bool>> &, size_t, std::optional<BoolOrString> &) {}

private:
    std::string m_key;
    std::string m_answer;
    bool match(const char *key)
    {
        if (m_key != key)
            return false;
        assigned = true;
        return true;
    }
};

bool assign(ClusterConfig &config, const std::string &keyPath, const std::string &answer)
{
    const size_t dot = keyPath.find('.');
    if (dot == std::string::npos) {
        Assigner assigner(keyPath, answer);
        if (config.isSageMaker())
            schema::visitSageMakerScalars(config, assigner);
        else
            schema::visitClusterScalars(config, assigner);
        return assigner.assigned;
    }
    const std::string block = keyPath.substr(0, dot);
    Assigner assigner(keyPath.substr(dot + 1), answer);
    schema::forEachBlock(config, [&](const char *key, auto &&visit) {
        if (block == key)
            visit(assigner);
    });
    return assigner.assigned;
}

} // namespace

Result<ClusterConfig> QuestionFlow::build(const Answers &answers) const
{
    // Walk the flow like the questionnaire would, checking every answer on the way.
    Answers a;
    std::vector<const Question *> asked;
    for (const Question &question : m_questions) {
        if (question.condition && !question.condition(a))
            continue;
        auto it = answers.find(question.id);
        const std::string given = it != answers.end() ? it->second : question.defaultAnswer;
        Result<std::string> value = interpret(question, given, a);
        if (!value)
            return makeError(ErrorCode::InvalidInput, value.error().message, question.id);
        a[question.id] = *value;
        asked.push_back(&question);
    }
    auto get = [&](const char *id) {
        auto it = a.find(id);
        return it == a.end() ? std::string() : it->second;
    };
    auto yes = [&](const char *id) { return get(id) == "yes"; };

    ClusterConfig c;
    if (get("compute_environment") == toString(ComputeEnvironment::AmazonSageMaker)) {
        c.computeEnvironment = ComputeEnvironment::AmazonSageMaker;
        c.distributedType = *distributedTypeFromString(get("sagemaker_distributed_type"));
    } else {
        const std::string machine = get("machine_type");
        c.distributedType = distributedTypeFromString(machine).value_or(DistributedType::No);
        if (yes("use_deepspeed"))
            c.distributedType = DistributedType::DeepSpeed;
        else if (yes("use_fsdp"))
            c.distributedType = DistributedType::Fsdp;
        else if (yes("use_megatron_lm"))
            c.distributedType = DistributedType::MegatronLm;
        c.useCpu = machine == "NO" ? yes("use_cpu") : machine == "MULTI_CPU";
        // What the questionnaire writes for questions it did not ask.
        c.downcastBf16 = BoolOrString(std::string("no"));
        c.mainTrainingFunction = "main";
        c.rdzvBackend = "static";
        c.sameNetwork = true;
        c.tpuEnv = std::vector<std::string>{};
        c.numMachines = 1;
        c.machineRank = 0;
        c.numProcesses = 1;
        c.debug = false;
        c.enableCpuAffinity = false;
        if (machine == "XLA")
            c.mixedPrecision = MixedPrecision::No;
    }
    if (a.count("mixed_precision"))
        c.mixedPrecision = mixedPrecisionFromString(get("mixed_precision"));

    for (const Question *question : asked) {
        const std::string &answer = a[question->id];
        if (question->configKey.empty() || answer.empty())
            continue;
        if (!assign(c, question->configKey, answer))
            return makeError(ErrorCode::Internal,
                             "question " + question->id + " names an unknown key " + question->configKey);
    }

    if (a.count("fsdp_sync_module_states") ||
        (c.distributedType == DistributedType::Fsdp && get("fsdp_version") == "1"))
        c.fsdp.syncModuleStates = yes("fsdp_cpu_ram_efficient_loading") || yes("fsdp_sync_module_states");
    if (a.count("fp8_override_linear_precision"))
        c.fp8.overrideLinearPrecision =
            std::vector<bool>{yes("fp8_override_fprop"), yes("fp8_override_dgrad"), yes("fp8_override_wgrad")};
    if (a.count("tpu_commands")) {
        auto commands = text::splitTrimmed(get("tpu_commands"), ";");
        if (!commands.empty())
            c.commands = commands;
    }
    if (a.count("tpu_vm")) {
        auto vms = text::splitTrimmed(get("tpu_vm"), ",");
        if (!vms.empty())
            c.tpuVm = vms;
    }
    if (a.count("tpu_env"))
        c.tpuEnv = text::splitTrimmed(get("tpu_env"), ",");
    applyDefaults(c);
    return c;
}

} // namespace accel::config
