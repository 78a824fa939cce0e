// accel: the headless command line twin of Accel Studio. It never links libtorch; commands that
// need tensors hand over to accel-worker.
#include "app/cli/command.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

namespace accel::cli {

namespace {
std::vector<Command> &registry()
{
    static std::vector<Command> list;
    return list;
}
} // namespace

const std::vector<Command> &commands()
{
    auto &list = registry();
    std::sort(list.begin(), list.end(),
              [](const Command &a, const Command &b) { return std::strcmp(a.name, b.name) < 0; });
    return list;
}

Registrar::Registrar(Command command)
{
    registry().push_back(command);
}

} // namespace accel::cli

static void printUsage(FILE *out)
{
    std::fprintf(out, "usage: accel <command> [options]\n\n"
                      "Accel Studio's command line: configure, launch and monitor PyTorch training,\n"
                      "and plan big-model inference. 'accel <command> --help' describes each command.\n\n"
                      "commands:\n");
    for (const auto &command : accel::cli::commands())
        std::fprintf(out, "  %-17s %s\n", command.name, command.summary);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        printUsage(stderr);
        return accel::cli::ExitBadInput;
    }
    const std::string name = argv[1];
    if (name == "--help" || name == "-h" || name == "help") {
        printUsage(stdout);
        return accel::cli::ExitOk;
    }
    if (name == "--version") {
        std::printf("accel %s\n", ACCEL_VERSION);
        return accel::cli::ExitOk;
    }
    for (const auto &command : accel::cli::commands()) {
        if (name == command.name)
            return command.run(argc - 1, argv + 1);
    }
    std::fprintf(stderr, "accel: unknown command '%s'\n\n", name.c_str());
    printUsage(stderr);
    return accel::cli::ExitBadInput;
}
