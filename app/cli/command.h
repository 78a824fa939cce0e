// Sub-commands of the `accel` CLI register themselves here; main() dispatches by name.
// Each command lives in its own file (cmd_<name>.cpp) with a static Registrar.
#pragma once

#include <string>
#include <vector>

namespace accel::cli {

// argc/argv start at the sub-command's name (argv[0] == "config"), so ArgParser::parse(argc, argv, 1)
// sees only the command's own arguments. Returns the process exit code: 0 success, 2 bad input,
// 1 failure.
using CommandFunction = int (*)(int argc, char **argv);

struct Command {
    const char *name;
    const char *summary;
    CommandFunction run;
};

const std::vector<Command> &commands();

struct Registrar {
    explicit Registrar(Command command);
};

// Exit codes of the CLI conventions.
constexpr int ExitOk = 0;
constexpr int ExitFailure = 1;
constexpr int ExitBadInput = 2;

} // namespace accel::cli
