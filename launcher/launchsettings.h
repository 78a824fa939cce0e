// LaunchSettings: everything `accel launch` decided after merging its flags with the cluster
// config file, in the shape Accelerate's launcher works with. The environment builder turns it
// into each rank's environment; the supervisor turns it into processes. Qt-free on purpose so
// that the merge and the environment tables are unit-testable as plain data.
#pragma once

#include "core/common/distributeddefaults.h"
#include "core/common/programs.h"

#include <map>
#include <string>
#include <vector>

namespace accel::launcher {

using EnvMap = std::map<std::string, std::string>;

// Which of Accelerate's launchers the run imitates (facts 3.2 step 6).
enum class LauncherKind { Simple, Torchrun, DeepSpeed };

const char *launcherKindName(LauncherKind kind);

// Where an argument's value came from. Accelerate renders some values differently depending on
// it (FP8 booleans typed as flags become 1/0, those from a config file True/False).
enum class Origin { Default, Config, Flag };

struct ArgValue {
    std::string text;
    Origin origin = Origin::Default;
    bool isBool = false;           // a boolean (text is "true"/"false")
    std::vector<std::string> list; // for list values from a config file (fp8 override precision)
};

// Accelerate's "args" namespace for the nested blocks: fsdp_*, fp8_*, megatron_lm_*,
// parallelism_config_* and the DeepSpeed keys (zero_stage, gradient_clipping, ...).
using ArgMap = std::map<std::string, ArgValue>;

struct ProgramSpec {
    enum class Kind { PythonScript, PythonModule, Executable, Job };
    Kind kind = Kind::PythonScript;
    std::string target;                 // script path, module name, program, or job file
    std::vector<std::string> args;      // passed untouched
    std::string python = defaultPython; // PYTHON_EXEC overrides it, as in torchrun (scriptPython)
    std::string workerProgram;          // accel-worker, for Kind::Job
};

// The c10d rendezvous of `--rdzv_backend c10d` on several machines (launcher/machinerendezvous.h):
// where the machines meet and how long they wait (rdzv_conf, launcher/rendezvousconf.h).
struct RendezvousOptions {
    std::string host;          // the endpoint: rdzv_endpoint, else main_process_ip
    int port = 0;              // rdzv_endpoint's port (29400 when it has none), else main_process_port
    double joinTimeoutS = 600; // rdzv_conf join_timeout: every machine joined within
    double readTimeoutS = 60;  // rdzv_conf read_timeout: a machine reaches the host within
    int isHost = -1;           // rdzv_conf is_host: 1 hosts, 0 never does, -1 hosts if it can bind the endpoint
};

struct LaunchSettings {
    LauncherKind launcher = LauncherKind::Simple;
    std::string distributedType = "NO"; // what the run amounts to: NO, MULTI_CPU, MULTI_GPU, FSDP, ...
    bool cpu = false;                   // --cpu or use_cpu
    bool debug = false;
    std::string mixedPrecision = "no";
    int numProcesses = 1; // total across machines
    int numMachines = 1;
    int machineRank = 0;
    std::string mainProcessIp; // empty: 127.0.0.1
    int mainProcessPort = kDefaultMainProcessPort;
    bool mainProcessPortExplicit = false; // typed or from the config (a busy port is then an error)
    bool sameNetwork = false;
    std::string gpuIds = "all";
    std::string deviceMaskVariable = "CUDA_VISIBLE_DEVICES";
    int threadsPerProcess = 1;
    bool enableCpuAffinity = false;
    std::string role = "default";
    int maxRestarts = 0;
    std::string rdzvBackend = "static";
    RendezvousOptions rendezvous; // used when machineRankAtRendezvous()
    std::string rendezvousId = "none";
    // The torch the ranks run ("2.12.1"; "" when unknown): torchrun names its NCCL error-handling
    // variable after it (TORCH_NCCL_ASYNC_ERROR_HANDLING from 2.2, NCCL_ASYNC_ERROR_HANDLING before).
    std::string torchVersion;

    std::string dynamoBackend = "NO"; // upper-case
    std::string dynamoMode = "default";
    bool dynamoUseFullgraph = false;
    bool dynamoUseDynamic = false;
    bool dynamoUseRegionalCompilation = false;

    bool useFsdp = false;
    bool useDeepSpeed = false;
    bool useMegatron = false;
    bool useParallelismConfig = false;
    ArgMap args;
    std::vector<std::string> deepspeedFieldsFromConfig; // ACCELERATE_CONFIG_DS_FIELDS

    ProgramSpec program;
    std::string workingDirectory; // absolute; DeepSpeed's PYTHONPATH entry
    std::string runDirectory;     // ACCEL_RUN_DIR
    // Append <runDirectory>/python (the trackers' start-up hook, docs/trackers.md) to the PYTHONPATH
    // of every rank that is not an accel-worker job.
    bool trackerStartupHook = false;
    std::vector<std::string> notes; // "how we differ from accelerate launch" lines

    int processesPerNode() const { return numMachines > 0 ? numProcesses / numMachines : numProcesses; }
    // c10d on several machines: the machines agree on machine ranks when they meet (machineRank
    // and the store's address and port are set then, before every attempt).
    bool machineRankAtRendezvous() const { return rdzvBackend == "c10d" && numMachines > 1; }
    std::string masterAddress() const { return mainProcessIp.empty() ? std::string("127.0.0.1") : mainProcessIp; }
};

} // namespace accel::launcher
