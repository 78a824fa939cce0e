#include "app/studio/processcount.h"

#include "core/config/configio.h"
#include "launcher/export/settingsfromconfig.h"
#include "launcher/launchplan.h"

#include <QCoreApplication>

namespace accel::app {

QString processCountFor(const config::ClusterConfig &config, bool *accepted)
{
    auto settings = launcher::exporting::settingsFromConfig(config, launcher::ProgramSpec{});
    if (accepted)
        *accepted = settings.has_value();
    if (!settings)
        return QCoreApplication::translate("accel::app::ProcessCount", "accel launch would refuse this config: %1")
            .arg(QString::fromStdString(settings.error().message));
    return launcher::processCountText(*settings);
}

QString processCountForFile(const QString &path, bool *accepted)
{
    if (accepted)
        *accepted = false;
    if (path.trimmed().isEmpty())
        return {};
    auto config = config::loadConfigFile(path.trimmed().toStdString());
    if (!config)
        return QString::fromStdString(config.error().toString());
    return processCountFor(*config, accepted);
}

} // namespace accel::app
