// accel config: the terminal questionnaire (as `accelerate config`) and the sub-commands that
// read and write config files: default, show, validate, update, to-fsdp2, cluster.
#include "app/cli/argparser.h"
#include "app/cli/command.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace accel::cli {

// Implemented in cmd_config_files.cpp and cmd_config_questionnaire.cpp.
int runConfigDefault(int argc, char **argv);
int runConfigShow(int argc, char **argv);
int runConfigValidate(int argc, char **argv);
int runConfigUpdate(int argc, char **argv);
int runConfigToFsdp2(int argc, char **argv);
int runConfigQuestionnaire(int argc, char **argv);
int runConfigCluster(int argc, char **argv);

namespace {

struct SubCommand {
    const char *name;
    const char *summary;
    CommandFunction run;
};

const SubCommand subCommands[] = {
    {"default", "write a minimal config for this machine (never overwrites)", &runConfigDefault},
    {"show", "print a config file normalised as Accelerate writes it", &runConfigShow},
    {"validate", "check a config file: errors (exit 2) and warnings", &runConfigValidate},
    {"update", "re-write a config file with today's keys and defaults", &runConfigUpdate},
    {"to-fsdp2", "convert an FSDP1 config to FSDP2", &runConfigToFsdp2},
    {"cluster", "write every node's config of a multi-node cluster (linted first)", &runConfigCluster},
};

int runConfig(int argc, char **argv)
{
    if (argc >= 2 && argv[1][0] != '-') {
        for (const SubCommand &sub : subCommands) {
            if (std::strcmp(argv[1], sub.name) == 0)
                return sub.run(argc - 1, argv + 1);
        }
        std::string names;
        for (const SubCommand &sub : subCommands)
            names += (names.empty() ? "" : ", ") + std::string(sub.name);
        std::fprintf(stderr, "accel config: unknown sub-command '%s' (expected one of %s)\n", argv[1], names.c_str());
        return ExitBadInput;
    }
    return runConfigQuestionnaire(argc, argv);
}

} // namespace

std::string configSubCommandsHelp()
{
    std::string text = "sub-commands:\n";
    for (const SubCommand &sub : subCommands) {
        std::string name = sub.name;
        text += "  " + name + std::string(name.size() < 12 ? 12 - name.size() : 1, ' ') + sub.summary + "\n";
    }
    text += "\n'accel config <sub-command> --help' describes each one.";
    return text;
}

static Registrar registrar({"config",
                            "create or check Accelerate config files (questionnaire, default, show, validate, ...)",
                            &runConfig});

} // namespace accel::cli
