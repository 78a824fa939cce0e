// The scripted questionnaire sessions shared by tst_configcli (piped into `accel config`) and
// tst_configwizard (the same answers given to the studio's wizard): one table, so the two tests
// cannot drift. Each line is one answer as typed in the terminal ("" = the default).
#pragma once

#include <QString>
#include <QStringList>

#include <vector>

namespace accel::test {

struct ScriptedFlow {
    const char *name;
    QStringList lines;
    QString expectedFile; // under tests/data/configs
};

inline std::vector<ScriptedFlow> scriptedFlows()
{
    return {
        {"single CPU", {"", "1", "yes", "", "no"}, QStringLiteral("single_cpu.yaml")},
        {"multi-CPU", {"", "multi-CPU", "", "", "", "", "4", ""}, QStringLiteral("multi_cpu.yaml")},
        {"multi-GPU multi-node",
         {"1", "5", "2", "0", "10.0.0.1", "29500", "", "", "", "", "", "", "16", "", "", "bf16"},
         QStringLiteral("multi_gpu_multinode.yaml")},
        {"FSDP2",
         {"", "multi-GPU", "", "", "", "", "yes", "", "", "", "", "yes", "", "", "yes", "", "8", "bf16"},
         QStringLiteral("fsdp2.yaml")},
        {"DeepSpeed json file",
         {"", "multi-GPU", "", "", "", "yes", "yes", "/home/user/ds_config.json", "yes", "", "2"},
         QStringLiteral("deepspeed_json_file.yaml")},
        {"fp8 TE",
         {"", "multi-GPU", "", "", "", "", "", "", "2", "", "", "fp8", "te", "", "", "", "", "", "", ""},
         QStringLiteral("fp8_te.yaml")},
    };
}

inline QByteArray stdinFor(const QStringList &lines)
{
    return (lines.join(QLatin1Char('\n')) + QLatin1Char('\n')).toUtf8();
}

} // namespace accel::test
