#include "app/studio/studioresources.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QStringList>
#include <QtGlobal>

// Q_INIT_RESOURCE must be used outside of any namespace.
static void initStudioQrc()
{
    Q_INIT_RESOURCE(studio);
}

namespace accel::app {

void initStudioResources()
{
    static const bool done = [] {
        initStudioQrc();
        return true;
    }();
    Q_UNUSED(done);
}

QString findResourceFile(const QString &relative)
{
    const QString exeDir = QCoreApplication::applicationDirPath();
    const QStringList candidates = {exeDir + QStringLiteral("/../share/accel-studio/") + relative,
                                    exeDir + QStringLiteral("/../resources/") + relative,
                                    QStringLiteral(ACCEL_STUDIO_SOURCE_ROOT "/resources/") + relative};
    for (const QString &candidate : candidates) {
        if (QFileInfo::exists(candidate))
            return QFileInfo(candidate).canonicalFilePath();
    }
    return {};
}

} // namespace accel::app
