#include "launcher/export/commandexport.h"

#include "core/common/distributeddefaults.h"
#include "core/common/programs.h"
#include "launcher/export/configflags.h"
#include "launcher/export/settingsfromconfig.h"
#include "launcher/export/shellquote.h"

namespace accel::launcher::exporting {

namespace {

std::vector<std::string> programWords(const ExportInput &input, bool accelForm, bool torchrun)
{
    const ProgramSpec &p = input.program;
    std::vector<std::string> words;
    switch (p.kind) {
    case ProgramSpec::Kind::Job:
        if (accelForm) {
            words = {"--job", p.target};
            return words;
        }
        words = {torchrun ? "--no-python" : "--no_python", input.workerProgram, p.target};
        break;
    case ProgramSpec::Kind::PythonModule:
        words = {"-m", p.target};
        break;
    case ProgramSpec::Kind::Executable:
        words = {torchrun ? "--no-python" : "--no_python", p.target};
        break;
    case ProgramSpec::Kind::PythonScript:
        words = {p.target};
        break;
    }
    words.insert(words.end(), p.args.begin(), p.args.end());
    return words;
}

// The interpreter of a script or module run by another Python than python3; else "".
std::string otherInterpreter(const ExportInput &input)
{
    const ProgramSpec &p = input.program;
    const bool python = p.kind == ProgramSpec::Kind::PythonScript || p.kind == ProgramSpec::Kind::PythonModule;
    return !python || p.python == defaultPython ? std::string() : p.python;
}

// "PYTHON_EXEC=/venv/bin/python " before an accel launch of a script or module run by another
// interpreter than python3 (an environment assignment, so the name stays unquoted); else "".
std::string pythonAssignment(const ExportInput &input)
{
    const std::string python = otherInterpreter(input);
    return python.empty() ? std::string() : "PYTHON_EXEC=" + shellQuote(python) + " ";
}

// The words that start Accelerate's launcher ("accelerate launch"), or torch's ("torchrun"). Both
// run the script with the Python they run on, so another interpreter runs them as modules:
// "/venv/bin/python -m accelerate.commands.accelerate_cli launch", "... -m torch.distributed.run".
std::vector<std::string> accelerateLaunchWords(const ExportInput &input)
{
    const std::string python = otherInterpreter(input);
    if (python.empty())
        return {"accelerate", "launch"};
    return {python, "-m", std::string(kAccelerateCliModule), "launch"};
}

std::vector<std::string> torchrunWords(const ExportInput &input)
{
    const std::string python = otherInterpreter(input);
    if (python.empty())
        return {"torchrun"};
    return {python, "-m", std::string(kTorchrunModule)};
}

// --name NAME when the input names the run.
std::vector<std::string> nameWords(const ExportInput &input)
{
    return input.runName.empty() ? std::vector<std::string>{} : std::vector<std::string>{"--name", input.runName};
}

int machinesOf(const config::ClusterConfig &config)
{
    return static_cast<int>(std::max<std::int64_t>(1, config.numMachines.value_or(1)));
}

// Flags without the per-node ones (the caller adds machine_rank and, for sbatch, the address).
Result<std::vector<FlagWord>> flagsWithout(const config::ClusterConfig &config,
                                           std::initializer_list<const char *> skip)
{
    auto flags = configToFlags(config);
    if (!flags)
        return flags;
    std::vector<FlagWord> kept;
    for (const FlagWord &flag : *flags) {
        bool drop = false;
        for (const char *name : skip)
            drop = drop || flag.name == name;
        if (!drop)
            kept.push_back(flag);
    }
    return kept;
}

Result<std::string> launchLines(const ExportInput &input, bool accelForm)
{
    const int machines = machinesOf(input.config);
    std::vector<std::string> prefix;
    if (accelForm) {
        if (input.configPath.empty())
            return makeError(ErrorCode::InvalidInput,
                             "the accel launch form needs the config file path (--config_file)");
        prefix = {input.accelProgram, "launch", "--config_file", input.configPath};
        if (!input.runDirectory.empty())
            prefix.insert(prefix.end(), {"--run_dir", input.runDirectory});
        const auto name = nameWords(input);
        prefix.insert(prefix.end(), name.begin(), name.end());
    } else {
        auto flags = flagsWithout(input.config, {"machine_rank"});
        if (!flags)
            return tl::unexpected(flags.error());
        prefix = accelerateLaunchWords(input);
        const auto words = flagArguments(*flags);
        prefix.insert(prefix.end(), words.begin(), words.end());
    }
    const auto program = programWords(input, accelForm, false);
    std::string out;
    for (int rank = 0; rank < machines; ++rank) {
        std::vector<std::string> words = prefix;
        if (machines > 1 || (!accelForm && input.config.machineRank.value_or(0) != 0)) {
            words.push_back("--machine_rank");
            words.push_back(std::to_string(machines > 1 ? rank : input.config.machineRank.value_or(0)));
        }
        words.insert(words.end(), program.begin(), program.end());
        if (machines > 1)
            out += "# node " + std::to_string(rank) + " of " + std::to_string(machines) + "\n";
        out += (accelForm ? pythonAssignment(input) : std::string()) + shellJoin(words) + "\n";
    }
    return out;
}

} // namespace

const char *exportFormName(ExportForm form)
{
    switch (form) {
    case ExportForm::AccelLaunch:
        return "accel";
    case ExportForm::AccelerateLaunch:
        return "accelerate";
    case ExportForm::Torchrun:
        return "torchrun";
    case ExportForm::Sbatch:
        return "sbatch";
    }
    return "accel";
}

Result<std::string> exportAccelLaunch(const ExportInput &input)
{
    return launchLines(input, true);
}

Result<std::string> exportAccelerateLaunch(const ExportInput &input)
{
    return launchLines(input, false);
}

Result<std::string> exportTorchrun(const ExportInput &input)
{
    auto settings = settingsFromConfig(input.config, input.program);
    if (!settings)
        return tl::unexpected(settings.error());
    const int machines = std::max(1, settings->numMachines);
    const EnvMap exports = nodeExports(*settings);
    const auto program = programWords(input, false, true);
    std::string out;
    for (int rank = 0; rank < machines; ++rank) {
        out += "# node " + std::to_string(rank) + " of " + std::to_string(machines) + "\n";
        for (const auto &[key, value] : exports)
            out += "export " + key + "=" + shellQuote(value) + "\n";
        std::vector<std::string> words = torchrunWords(input);
        words.insert(words.end(), {"--nproc_per_node", std::to_string(settings->processesPerNode()), "--nnodes",
                                   std::to_string(machines), "--node_rank", std::to_string(rank)});
        const std::string port = std::to_string(settings->mainProcessPort);
        if (machines > 1 && !settings->sameNetwork) {
            words.insert(words.end(), {"--rdzv_endpoint", settings->masterAddress() + ":" + port});
        } else {
            if (!settings->mainProcessIp.empty())
                words.insert(words.end(), {"--master_addr", settings->mainProcessIp});
            words.insert(words.end(), {"--master_port", port});
        }
        if (settings->rdzvBackend != "static")
            words.insert(words.end(), {"--rdzv_backend", settings->rdzvBackend});
        if (settings->maxRestarts != 0)
            words.insert(words.end(), {"--max_restarts", std::to_string(settings->maxRestarts)});
        words.insert(words.end(), program.begin(), program.end());
        out += shellJoin(words) + "\n";
    }
    return out;
}

// An #SBATCH directive ends at the line's end: a newline (or any control character) in a header
// value would start a line of its own, e.g. a shell command. Such values are refused.
static Result<void> checkSbatchHeaderField(const char *field, const std::string &value)
{
    for (const unsigned char c : value) {
        if (c < 0x20 || c == 0x7f) {
            std::string shown;
            for (const unsigned char v : value)
                shown += v == '\n'               ? std::string("\\n")
                         : v < 0x20 || v == 0x7f ? std::string("?")
                                                 : std::string(1, char(v));
            return makeError(ErrorCode::InvalidInput,
                             std::string(field) +
                                 ": control characters (newline, tab, ...) are not allowed in an "
                                 "#SBATCH header line; got '" +
                                 shown + "'",
                             "sbatch");
        }
    }
    return {};
}

Result<std::string> exportSbatch(const ExportInput &input)
{
    for (const auto &[field, value] : {std::pair<const char *, const std::string &>{"job name", input.jobName},
                                       {"partition", input.partition},
                                       {"time limit", input.timeLimit}}) {
        if (auto ok = checkSbatchHeaderField(field, value); !ok)
            return tl::unexpected(ok.error());
    }
    auto flags = flagsWithout(input.config, {"machine_rank", "main_process_ip", "main_process_port"});
    if (!flags)
        return tl::unexpected(flags.error());
    const int machines = machinesOf(input.config);
    std::vector<std::string> launch = input.sbatchUseAccelerate
                                          ? accelerateLaunchWords(input)
                                          : std::vector<std::string>{input.accelProgram, "launch"};
    const auto flagWords = flagArguments(*flags);
    launch.insert(launch.end(), flagWords.begin(), flagWords.end());
    if (!input.sbatchUseAccelerate) {
        const auto name = nameWords(input);
        launch.insert(launch.end(), name.begin(), name.end());
    }
    // The node rank and the address are expanded by the bash started by srun on each node.
    // accel launch writes its run directory where `accel slurm follow` looks for it (ACCEL_RUN_DIR).
    std::string runDir;
    if (!input.sbatchUseAccelerate)
        runDir = machines > 1 ? " --run_dir \"$ACCEL_RUN_DIR/node$SLURM_NODEID\"" : " --run_dir \"$ACCEL_RUN_DIR\"";
    const std::string inner = (input.sbatchUseAccelerate ? std::string() : pythonAssignment(input)) +
                              shellJoin(launch) +
                              " --machine_rank \"$SLURM_NODEID\" --main_process_ip \"$MASTER_ADDR\""
                              " --main_process_port \"$MASTER_PORT\"" +
                              runDir + " " + shellJoin(programWords(input, !input.sbatchUseAccelerate, false));
    std::string out = "#!/bin/bash\n";
    out += "#SBATCH --job-name=" + shellQuote(input.jobName) + "\n";
    out += "#SBATCH --nodes=" + std::to_string(machines) + "\n";
    out += "#SBATCH --ntasks-per-node=1\n";
    if (input.cpusPerTask > 0)
        out += "#SBATCH --cpus-per-task=" + std::to_string(input.cpusPerTask) + "\n";
    if (!input.partition.empty())
        out += "#SBATCH --partition=" + shellQuote(input.partition) + "\n";
    if (!input.timeLimit.empty())
        out += "#SBATCH --time=" + shellQuote(input.timeLimit) + "\n";
    out += "# Generated by Accel Studio: one launcher per node; each node's rank is read on that node.\n";
    out += "set -euo pipefail\n";
    // `sed -n 1p` reads the whole list: `head -n1` would close the pipe early, scontrol could die
    // of SIGPIPE, and under pipefail the script would stop there without a word.
    out += "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | sed -n 1p)\n";
    if (input.fixedPort)
        out += "MASTER_PORT=" + std::to_string(input.config.mainProcessPort.value_or(kDefaultMainProcessPort)) + "\n";
    else
        out += "MASTER_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind((\"\", 0)); "
               "print(s.getsockname()[1])')\n";
    out += "export MASTER_ADDR MASTER_PORT\n";
    if (!input.sbatchUseAccelerate) {
        out += "# The run directory: $ACCEL_RUN_DIR when set, else accel-run-<job id> in the job's working directory";
        out += machines > 1 ? " (node N's: its node<N> folder).\n" : ".\n";
        out += "ACCEL_RUN_DIR=${ACCEL_RUN_DIR:-$PWD/accel-run-$SLURM_JOB_ID}\n";
        out += "export ACCEL_RUN_DIR\n";
        out += "echo \"accel run directory: $ACCEL_RUN_DIR\"\n";
    }
    out += "srun --nodes=" + std::to_string(machines) + " --ntasks-per-node=1 bash -c " + shellQuote(inner) + "\n";
    return out;
}

Result<std::string> exportCommand(ExportForm form, const ExportInput &input)
{
    switch (form) {
    case ExportForm::AccelLaunch:
        return exportAccelLaunch(input);
    case ExportForm::AccelerateLaunch:
        return exportAccelerateLaunch(input);
    case ExportForm::Torchrun:
        return exportTorchrun(input);
    case ExportForm::Sbatch:
        return exportSbatch(input);
    }
    return makeError(ErrorCode::InvalidInput, "unknown export form");
}

} // namespace accel::launcher::exporting
