#include "app/studio/monitor/runoutput.h"

#include "core/rundir/runlayout.h"
#include "launcher/jobfile.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

namespace accel::app {

RunOutput fineTunedOutput(const QString &runDirectory)
{
    auto job = launcher::JobFile::load(QDir(runDirectory).filePath(QLatin1String(rundir::file::Job)).toStdString());
    if (!job || job->recipe() != "causal_lm")
        return {};
    const QString named = QString::fromStdString(job->value("output_dir"));
    const QDir output(named.isEmpty() ? runDirectory : named);
    RunOutput found;
    const QString adapter = output.filePath(QStringLiteral("adapter"));
    if (QFileInfo::exists(adapter + QStringLiteral("/adapter_config.json"))) {
        QFile file(adapter + QStringLiteral("/adapter_config.json"));
        QString base;
        if (file.size() < (1 << 20) && file.open(QIODevice::ReadOnly))
            base = QJsonDocument::fromJson(file.readAll())
                       .object()
                       .value(QStringLiteral("base_model_name_or_path"))
                       .toString();
        if (base.isEmpty() || !QFileInfo(base).isDir())
            base = QString::fromStdString(job->value("model.path"));
        found.model = base;
        found.adapter = adapter;
    } else if (QFileInfo::exists(output.filePath(QStringLiteral("model/config.json")))) {
        found.model = output.filePath(QStringLiteral("model"));
    }
    return found;
}

} // namespace accel::app
