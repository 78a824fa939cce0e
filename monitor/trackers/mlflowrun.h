// MlflowRun: the metrics of one run of MLflow's file store, read live. A run is a folder
// <mlruns>/<experiment id>/<run id> holding meta.yaml and metrics/; each metric is the file
// metrics/<key> (a key with "/" in it is a path of folders), one line per logged value:
//   <timestamp in ms> <value> <step>
// (older MLflow wrote no step: 0). A last line without its newline is still being written and is
// read once complete.
#pragma once

#include "monitor/trackers/trackersample.h"

#include <QByteArray>

#include <map>

namespace accel::trackers {

class MlflowRun : public TrackerSource {
public:
    explicit MlflowRun(QString runFolder);
    TrackerPoll poll() override;

    // A folder holding meta.yaml and a metrics/ folder.
    static bool isRunFolder(const QString &folder);

private:
    struct MetricFile {
        qint64 offset = 0;
        QByteArray pending;
    };
    QString m_folder;
    std::map<QString, MetricFile> m_files; // by key
};

} // namespace accel::trackers
