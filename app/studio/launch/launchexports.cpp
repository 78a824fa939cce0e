#include "app/studio/launch/launchexports.h"

#include "core/common/fileutil.h"
#include "core/config/configio.h"

#include <QFile>

#include <iterator>

namespace accel::app {

namespace ex = launcher::exporting;

namespace {
const ExportChoice kExports[] = {
    {"Config as YAML...", "yaml", -1},
    {"Config as JSON...", "json", -2},
    {"accel launch command...", "sh", static_cast<int>(ex::ExportForm::AccelLaunch)},
    {"accelerate launch command...", "sh", static_cast<int>(ex::ExportForm::AccelerateLaunch)},
    {"torchrun commands per node...", "sh", static_cast<int>(ex::ExportForm::Torchrun)},
    {"SLURM sbatch script...", "sbatch", static_cast<int>(ex::ExportForm::Sbatch)},
};
} // namespace

const ExportChoice *exportChoices(int *count)
{
    *count = static_cast<int>(std::size(kExports));
    return kExports;
}

Result<void> saveConfigCopy(const QString &configPath, const QString &path)
{
    auto config = config::loadConfigFile(configPath.toStdString());
    if (!config)
        return tl::unexpected(config.error());
    return config::saveConfigFile(*config, path.toStdString());
}

Result<void> writeCommandScript(ex::ExportForm form, const std::string &text, const QString &path)
{
    std::string content = text;
    if (form != ex::ExportForm::Sbatch)
        content = "#!/bin/bash\n" + content;
    if (auto written = fileutil::writeFileAtomic(path.toStdString(), content); !written)
        return written;
    // A script, so executable (sbatch scripts too: they also run with bash directly).
    QFile file(path);
    if (!file.setPermissions(file.permissions() | QFileDevice::ExeOwner | QFileDevice::ExeGroup |
                             QFileDevice::ExeOther))
        return makeError(ErrorCode::Io, "cannot make the script executable: " + file.errorString().toStdString(),
                         path.toStdString());
    return {};
}

} // namespace accel::app
