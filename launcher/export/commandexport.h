// Exports a cluster config plus a program as the four command forms the studio offers, and
// re-imports any of them: `accel launch --config_file F`, `accelerate launch` with equivalent
// flags, per-node `torchrun` lines with the environment Accelerate would export, and a SLURM
// sbatch script (single or multi-node; node rank evaluated on the compute node). Every argument
// is shell-quoted; importCommand() reads each form back so export -> import round-trips.
#pragma once

#include "core/common/result.h"
#include "core/config/clusterconfig.h"
#include "launcher/launchsettings.h"

#include <string>
#include <vector>

namespace accel::launcher::exporting {

enum class ExportForm { AccelLaunch, AccelerateLaunch, Torchrun, Sbatch };
const char *exportFormName(ExportForm form); // "accel", "accelerate", "torchrun", "sbatch"

// The modules another interpreter runs Accelerate's and torch's launchers as (both run the script
// with their own Python): "PYTHON -m accelerate.commands.accelerate_cli launch ...", "PYTHON -m
// torch.distributed.run ...".
inline constexpr const char *kAccelerateCliModule = "accelerate.commands.accelerate_cli";
inline constexpr const char *kTorchrunModule = "torch.distributed.run";

struct ExportInput {
    config::ClusterConfig config;
    std::string configPath; // the file `accel launch --config_file` names
    ProgramSpec program;    // Kind::Job: target is the job YAML
    std::string accelProgram = "accel";
    std::string workerProgram = "accel-worker"; // what runs a job outside accel launch
    // The accel forms' --run_dir (not sbatch's: the job has its own) and --name, when set. A
    // script's or module's interpreter (program.python, unless python3) is their PYTHON_EXEC, and
    // runs the accelerate and torchrun forms' launchers (kAccelerateCliModule, kTorchrunModule).
    std::string runDirectory;
    std::string runName;
    // sbatch
    std::string jobName = "accel";
    int cpusPerTask = 0; // 0: no --cpus-per-task line
    std::string partition;
    std::string timeLimit;            // e.g. 01:00:00
    bool sbatchUseAccelerate = false; // srun runs `accelerate launch` flags instead of `accel launch`
    bool fixedPort = false;           // sbatch: use main_process_port instead of a free port at run time
};

// One-line commands for forms 1 and 2 (multi-node: one line per node, machine_rank differing).
Result<std::string> exportAccelLaunch(const ExportInput &input);
Result<std::string> exportAccelerateLaunch(const ExportInput &input);
// A shell snippet per node: "# node R" comment, exports, then the torchrun line.
Result<std::string> exportTorchrun(const ExportInput &input);
// A complete sbatch script.
Result<std::string> exportSbatch(const ExportInput &input);
Result<std::string> exportCommand(ExportForm form, const ExportInput &input);

struct ImportedCommand {
    ExportForm form = ExportForm::AccelLaunch;
    config::ClusterConfig config; // for accel form: the --config_file's content with flag overrides
    std::string configPath;
    ProgramSpec program;      // program.python: the command's PYTHON_EXEC=..., else python3
    std::string runDirectory; // --run_dir, --name of an accel form
    std::string runName;
    std::vector<std::string> notes; // what could not be recovered
};

// Reads the first node's command of any exported form (or a hand-written equivalent).
Result<ImportedCommand> importCommand(const std::string &text);

} // namespace accel::launcher::exporting
