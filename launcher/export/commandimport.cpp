// importCommand(): reads any exported form back into a config and a program.
#include "launcher/export/commandexport.h"

#include "core/common/accelerateenv.h"
#include "core/config/configio.h"
#include "launcher/export/configflags.h"
#include "launcher/export/shellquote.h"
#include "launcher/launchflags.h"

#include <cctype>
#include <map>
#include <sstream>

namespace accel::launcher::exporting {

namespace {

using Flags = std::map<std::string, std::string>;

std::string flagName(std::string word)
{
    while (!word.empty() && word.front() == '-')
        word.erase(word.begin());
    for (char &c : word) {
        if (c == '-')
            c = '_';
    }
    return word;
}

// Logical lines (backslash-newline joined), comments and blank lines kept out.
std::vector<std::string> logicalLines(const std::string &text)
{
    std::vector<std::string> lines;
    std::string current;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\\') {
            current += line.substr(0, line.size() - 1) + " ";
            continue;
        }
        current += line;
        size_t first = current.find_first_not_of(" \t");
        if (first != std::string::npos && current[first] != '#')
            lines.push_back(current.substr(first));
        current.clear();
    }
    if (!current.empty())
        lines.push_back(current);
    return lines;
}

// Parses launch flags and the program from words after "launch".
Result<void> parseLaunchWords(const std::vector<std::string> &words, size_t start, Flags &flags, ProgramSpec &program)
{
    size_t i = start;
    bool noPython = false;
    bool module = false;
    for (; i < words.size(); ++i) {
        const std::string &word = words[i];
        if (word.size() < 2 || word[0] != '-')
            break;
        std::string name = flagName(word);
        std::string inlineValue;
        bool hasInline = false;
        if (auto eq = name.find('='); eq != std::string::npos) {
            inlineValue = word.substr(word.find('=') + 1);
            name = name.substr(0, eq);
            hasInline = true;
        }
        if (word == "-m")
            name = "module";
        else if (word == "-q")
            name = "quiet";
        else if (word == "-t")
            name = "tee";
        const LaunchFlag *flag = findLaunchFlag(name);
        if (!flag)
            return makeError(ErrorCode::InvalidInput, "unknown launch flag " + word);
        if (flag->kind == LaunchFlag::Kind::Switch) {
            flags[name] = "true";
            noPython = noPython || name == "no_python";
            module = module || name == "module";
            continue;
        }
        if (hasInline) {
            flags[name] = inlineValue;
            continue;
        }
        if (i + 1 >= words.size())
            return makeError(ErrorCode::InvalidInput, "launch flag " + word + " needs a value");
        flags[name] = words[++i];
    }
    if (auto job = flags.find("job"); job != flags.end()) {
        program.kind = ProgramSpec::Kind::Job;
        program.target = job->second;
        program.args.assign(words.begin() + static_cast<long>(i), words.end());
        return {};
    }
    if (i >= words.size())
        return makeError(ErrorCode::InvalidInput, "the command names no program (script, -m module or --job)");
    program.target = words[i];
    program.args.assign(words.begin() + static_cast<long>(i) + 1, words.end());
    program.kind = module     ? ProgramSpec::Kind::PythonModule
                   : noPython ? ProgramSpec::Kind::Executable
                              : ProgramSpec::Kind::PythonScript;
    // A job run through a launcher that does not know jobs: --no_python accel-worker JOB.
    const std::string &t = program.target;
    const bool isWorker = t == "accel-worker" || (t.size() > 13 && t.compare(t.size() - 13, 13, "/accel-worker") == 0);
    if (noPython && isWorker && !program.args.empty()) {
        program.workerProgram = t;
        program.kind = ProgramSpec::Kind::Job;
        program.target = program.args.front();
        program.args.erase(program.args.begin());
    }
    return {};
}

size_t findWord(const std::vector<std::string> &words, const std::string &word, size_t from = 0)
{
    for (size_t i = from; i < words.size(); ++i) {
        if (words[i] == word)
            return i;
    }
    return std::string::npos;
}

// Leading NAME=VALUE words (the command's environment): removed from `words`; PYTHON_EXEC's
// value is returned ("" when there is none).
std::string takeAssignments(std::vector<std::string> &words)
{
    std::string python;
    while (!words.empty()) {
        const std::string &word = words.front();
        const size_t eq = word.find('=');
        bool name = eq != std::string::npos && eq > 0 && !std::isdigit(static_cast<unsigned char>(word[0]));
        for (size_t i = 0; name && i < eq; ++i)
            name = std::isalnum(static_cast<unsigned char>(word[i])) || word[i] == '_';
        if (!name)
            break;
        if (word.compare(0, eq, "PYTHON_EXEC") == 0)
            python = word.substr(eq + 1);
        words.erase(words.begin());
    }
    return python;
}

Result<ImportedCommand> importLaunch(std::vector<std::string> words, ExportForm form)
{
    ImportedCommand result;
    result.form = form;
    std::string python = takeAssignments(words);
    const size_t launchAt = findWord(words, "launch");
    if (launchAt == std::string::npos)
        return makeError(ErrorCode::InvalidInput, "the command runs no 'launch' command");
    // "PYTHON -m accelerate.commands.accelerate_cli launch": Accelerate's launcher on that Python.
    if (launchAt >= 3 && words[launchAt - 2] == "-m" && words[launchAt - 1] == kAccelerateCliModule)
        python = words[launchAt - 3];
    Flags flags;
    if (auto parsed = parseLaunchWords(words, launchAt + 1, flags, result.program); !parsed)
        return tl::unexpected(parsed.error());
    if (!python.empty())
        result.program.python = python;
    if (auto it = flags.find("run_dir"); it != flags.end() && !it->second.empty() && it->second.front() != '$')
        result.runDirectory = it->second;
    if (auto it = flags.find("name"); it != flags.end())
        result.runName = it->second;
    // Values the shell expands at run time (sbatch: "$SLURM_NODEID", "$MASTER_ADDR") are not settings.
    for (auto it = flags.begin(); it != flags.end();) {
        if (!it->second.empty() && it->second.front() == '$') {
            result.notes.push_back("--" + it->first + " is " + it->second + " (set when the job runs)");
            it = flags.erase(it);
        } else {
            ++it;
        }
    }
    config::ClusterConfig base;
    bool infer = true;
    if (auto it = flags.find("config_file"); it != flags.end()) {
        auto loaded = config::loadConfigFile(it->second);
        if (!loaded)
            return tl::unexpected(loaded.error());
        base = *loaded;
        result.configPath = it->second;
        infer = false;
    }
    auto config = flagsToConfig(flags, base, infer);
    if (!config)
        return tl::unexpected(config.error());
    result.config = *config;
    return result;
}

Result<ImportedCommand> importTorchrun(const std::vector<std::string> &exports, const std::vector<std::string> &words)
{
    std::map<std::string, std::string> env;
    for (const std::string &line : exports) {
        auto split = shellSplit(line);
        if (!split || split->size() < 2)
            continue;
        const std::string &assignment = (*split)[1];
        if (auto eq = assignment.find('='); eq != std::string::npos)
            env[assignment.substr(0, eq)] = assignment.substr(eq + 1);
    }
    Flags torch;
    size_t i = 1;
    for (; i < words.size() && words[i].size() > 1 && words[i][0] == '-'; ++i) {
        const std::string name = flagName(words[i]);
        if (name == "no_python" || name == "m" || name == "module" || name == "standalone") {
            torch[name == "m" ? "module" : name] = "true";
            continue;
        }
        if (i + 1 >= words.size())
            return makeError(ErrorCode::InvalidInput, "torchrun flag " + words[i] + " needs a value");
        torch[name] = words[++i];
    }
    // The program words go through the launch parser (same -m / --no_python conventions).
    std::vector<std::string> programWords = {"launch"};
    if (torch.count("no_python"))
        programWords.push_back("--no_python");
    if (torch.count("module"))
        programWords.push_back("-m");
    programWords.insert(programWords.end(), words.begin() + static_cast<long>(i), words.end());
    ImportedCommand result;
    result.form = ExportForm::Torchrun;
    Flags flags;
    if (auto parsed = parseLaunchWords(programWords, 1, flags, result.program); !parsed)
        return tl::unexpected(parsed.error());
    flags.clear();
    int perNode = 1;
    int nodes = 1;
    try {
        perNode = std::stoi(torch.count("nproc_per_node") ? torch["nproc_per_node"] : "1");
        nodes = std::stoi(torch.count("nnodes") ? torch["nnodes"] : "1");
    } catch (const std::exception &) {
        return makeError(ErrorCode::InvalidInput, "torchrun --nproc_per_node / --nnodes must be integers");
    }
    flags["num_processes"] = std::to_string(perNode * nodes);
    flags["num_machines"] = std::to_string(nodes);
    if (torch.count("node_rank"))
        flags["machine_rank"] = torch["node_rank"];
    if (auto it = torch.find("rdzv_endpoint"); it != torch.end()) {
        const auto colon = it->second.rfind(':');
        flags["main_process_ip"] = it->second.substr(0, colon);
        if (colon != std::string::npos)
            flags["main_process_port"] = it->second.substr(colon + 1);
    } else {
        if (torch.count("master_addr"))
            flags["main_process_ip"] = torch["master_addr"];
        if (torch.count("master_port"))
            flags["main_process_port"] = torch["master_port"];
        if (nodes > 1)
            flags["same_network"] = "true";
    }
    if (torch.count("rdzv_backend"))
        flags["rdzv_backend"] = torch["rdzv_backend"];
    if (torch.count("max_restarts"))
        flags["max_restarts"] = torch["max_restarts"];
    auto envFlag = [&](const char *var, const char *flag) {
        if (auto it = env.find(var); it != env.end())
            flags[flag] = it->second;
    };
    envFlag(accelerateenv::kMixedPrecision, "mixed_precision");
    envFlag("FSDP_VERSION", "fsdp_version");
    envFlag(accelerateenv::kDeepSpeedZeroStage, "zero_stage");
    envFlag(accelerateenv::kFp8Backend, "fp8_backend");
    envFlag("CUDA_VISIBLE_DEVICES", "gpu_ids");
    if (env.count(accelerateenv::kUseFsdp))
        flags["use_fsdp"] = "true";
    else if (env.count(accelerateenv::kUseDeepSpeed))
        flags["use_deepspeed"] = "true";
    else if (env.count(accelerateenv::kUseMegatronLm))
        flags["use_megatron_lm"] = "true";
    else if (!env.count(accelerateenv::kUseCpu) && perNode * nodes > 1)
        flags["multi_gpu"] = "true";
    if (auto it = env.find(accelerateenv::kUseCpu); it != env.end() && it->second == "True")
        flags["cpu"] = "true";
    auto config = flagsToConfig(flags, config::ClusterConfig{}, true);
    if (!config)
        return tl::unexpected(config.error());
    result.config = *config;
    result.notes.push_back(std::string("torchrun lines carry the topology, precision and mode; other block keys "
                                       "(FSDP_*, ") +
                           accelerateenv::kDeepSpeedPrefix + "*) are not read back");
    return result;
}

} // namespace

Result<ImportedCommand> importCommand(const std::string &text)
{
    std::vector<std::string> exports;
    for (const std::string &line : logicalLines(text)) {
        auto words = shellSplit(line);
        if (!words)
            return tl::unexpected(words.error());
        if (words->empty())
            continue;
        const std::string &first = words->front();
        if (first == "export") {
            exports.push_back(line);
            continue;
        }
        if (first == "torchrun")
            return importTorchrun(exports, *words);
        // "PYTHON -m torch.distributed.run ...": torchrun on that Python, which runs the script.
        if (words->size() > 2 && (*words)[1] == "-m" && (*words)[2] == kTorchrunModule) {
            auto imported = importTorchrun(exports, std::vector<std::string>(words->begin() + 2, words->end()));
            const auto kind = imported ? imported->program.kind : ProgramSpec::Kind::Executable;
            if (kind == ProgramSpec::Kind::PythonScript || kind == ProgramSpec::Kind::PythonModule)
                imported->program.python = first;
            return imported;
        }
        if (first == "srun") {
            const size_t bash = findWord(*words, "-c");
            if (bash == std::string::npos || bash + 1 >= words->size())
                return makeError(ErrorCode::InvalidInput, "srun line without bash -c COMMAND");
            auto inner = shellSplit((*words)[bash + 1]);
            if (!inner)
                return tl::unexpected(inner.error());
            return importLaunch(*inner, ExportForm::Sbatch);
        }
        std::vector<std::string> command = *words;
        (void)takeAssignments(command); // importLaunch reads them again
        const std::string program = command.empty() ? std::string() : command.front();
        const size_t launch = findWord(command, "launch");
        if (launch == 3 && command[1] == "-m" && command[2] == kAccelerateCliModule)
            return importLaunch(*words, ExportForm::AccelerateLaunch);
        if (launch == 1 && (program == "accelerate" || program.find("accel") != std::string::npos)) {
            const bool accelerate =
                program == "accelerate" ||
                (program.size() > 11 && program.compare(program.size() - 11, 11, "/accelerate") == 0);
            return importLaunch(*words, accelerate ? ExportForm::AccelerateLaunch : ExportForm::AccelLaunch);
        }
    }
    return makeError(ErrorCode::InvalidInput,
                     "no accel launch, accelerate launch, torchrun or srun command found in the text");
}

} // namespace accel::launcher::exporting
