#include "monitor/trackers/trackerhook.h"

#include "core/rundir/privatefiles.h"
#include "core/rundir/runlayout.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>

#include <unistd.h>

namespace accel::trackers {

QByteArray trackerHookSource()
{
    QFile file(QStringLiteral(":/accel/trackers/accel_tracker_hook.py"));
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return file.readAll();
}

Result<void> writeTrackerHook(const QString &runDirectory)
{
    const QByteArray source = trackerHookSource();
    if (source.isEmpty())
        return makeError(ErrorCode::Failed, "the trackers' start-up hook is missing from this build");
    const std::string run = runDirectory.toStdString();
    if (auto made = rundir::makePrivateDirectory(run + "/" + rundir::file::PythonStartup); !made)
        return made;
    auto fd = rundir::openRunFile(run, std::string(rundir::file::PythonStartup) + "/sitecustomize.py",
                                  rundir::OpenFor::CreateOnly);
    if (!fd)
        return tl::unexpected(fd.error());
    const bool written = rundir::writeAll(*fd, source.constData(), size_t(source.size()));
    ::close(*fd);
    if (!written)
        return makeError(ErrorCode::Io, "cannot write the trackers' start-up hook",
                         run + "/" + rundir::file::PythonStartup + "/sitecustomize.py");
    return {};
}

std::optional<TrackerReport> parseTrackerReport(const QByteArray &line)
{
    const QJsonDocument document = QJsonDocument::fromJson(line);
    if (!document.isObject())
        return std::nullopt;
    const QJsonObject object = document.object();
    TrackerReport report;
    report.kind = object.value(QLatin1String("kind")).toString();
    report.path = object.value(QLatin1String("path")).toString();
    report.rank = object.value(QLatin1String("rank")).toInt(0);
    report.pid = static_cast<qint64>(object.value(QLatin1String("pid")).toDouble(0));
    if (report.kind != QLatin1String("tensorboard") && report.kind != QLatin1String("mlflow") &&
        report.kind != QLatin1String("sqlite"))
        return std::nullopt;
    if (!report.path.startsWith(QLatin1Char('/')) || report.rank < 0)
        return std::nullopt;
    return report;
}

} // namespace accel::trackers
