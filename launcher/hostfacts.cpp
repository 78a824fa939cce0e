// This machine's facts for the launch merge: physical cores (core/common/cputopology), accelerators
// from /dev, and the torch version the ranks will run.
#include "launcher/launchmerge.h"

#include "buildinfo.h"
#include "core/common/cputopology.h"
#include "core/common/programs.h"

#include <QProcess>
#include <QString>

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace accel::launcher {

std::string detectTorchVersion(const ProgramSpec &program, const EnvMap &environment)
{
    if (program.kind == ProgramSpec::Kind::Job)
        return ACCEL_TORCH_VERSION;
    if (program.kind == ProgramSpec::Kind::Executable)
        return {};
    const auto exec = environment.find(pythonProgramVariable);
    const std::string python = scriptPython(program.python, exec != environment.end() ? exec->second.c_str() : nullptr);
    // The package metadata only: importing torch would take seconds.
    QProcess process;
    process.start(QString::fromStdString(python),
                  {QStringLiteral("-c"), QStringLiteral("import importlib.metadata as m\ntry:\n"
                                                        "    print(m.version('torch'))\nexcept Exception:\n"
                                                        "    pass\n")});
    if (!process.waitForFinished(10000)) {
        process.kill();
        process.waitForFinished(1000);
        return {};
    }
    if (process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0)
        return {};
    return QString::fromUtf8(process.readAllStandardOutput()).trimmed().toStdString();
}

HostFacts detectHostFacts()
{
    HostFacts facts;
    facts.physicalCores = localPhysicalCores();
    std::error_code error;
    for (const auto &entry : std::filesystem::directory_iterator("/dev", error)) {
        const std::string name = entry.path().filename().string();
        if (name.size() > 6 && name.rfind("nvidia", 0) == 0 &&
            std::all_of(name.begin() + 6, name.end(), [](unsigned char c) { return std::isdigit(c); }))
            ++facts.acceleratorCount;
    }
    return facts;
}

} // namespace accel::launcher
