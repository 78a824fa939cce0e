// TrackerImport: what `accel launch` runs beside its ranks so that a script's own trackers
// (TensorBoard, MLflow's file store, trackio) become the run's metrics with no change to the script
// (docs/trackers.md). Sources are found
//   - from the start-up hook's reports in <run>/trackers.jsonl (every Python rank, see trackerhook.h),
//   - from the event files a rank process holds open (/proc/<pid>/fd),
//   - under the folders named at launch (--tracker_dir), searched every few seconds.
// Each source is polled (once a second, and at once when a rank exits, so what it wrote last is
// read before the run ends) and every new scalar is appended to metrics/rank<N>.jsonl of the rank
// that wrote it (rank 0 for a named folder) in the metrics format (docs/metrics.md): step, wall time
// and key as the tracker stored them. The charts, `accel tail`, comparisons, exports and the
// detectors then see them as they see the project's own tracker. Values stamped before the launch
// began belong to earlier runs in the same folder or database and are not read. Found sources and
// problems are events: tracker_found, tracker_problem (once per source and problem).
#pragma once

#include "monitor/trackers/trackersample.h"

#include <QJsonObject>
#include <QObject>
#include <QStringList>
#include <QTimer>

#include <map>
#include <memory>
#include <set>

namespace accel::trackers {

struct TrackerImportSettings {
    bool discover = true; // hook reports and open files of the ranks
    QStringList folders;  // named at launch
    double since = 0;     // Unix time: values stamped earlier are not read
    int intervalMs = 1000;
};

class TrackerImport : public QObject {
    Q_OBJECT
public:
    TrackerImport(const QString &runDirectory, TrackerImportSettings settings, QObject *parent = nullptr);
    ~TrackerImport() override;

    void start();
    // A last poll, then none.
    void stop();
    // Finds and reads now; `searchFolders` searches the named folders even if it did a moment ago.
    void pollNow(bool searchFolders = false);

    // The sources found so far: kind ("tensorboard", "mlflow", "trackio") -> paths.
    std::map<QString, QStringList> sources() const;

public Q_SLOTS:
    void rankStarted(int rank, qint64 pid);
    // Reads at once: what the rank wrote before it exited is in the metrics before the run ends.
    void rankExited(int rank);

private:
    struct Source;
    void addSource(const QString &kind, const QString &path, int rank);
    void readReports();
    void scanOpenFiles();
    void scanFolders();
    void readSources();
    void writeSamples(int rank, const TrackerSamples &samples);
    void reportProblem(Source &source, const QString &problem);
    void appendEvent(const QString &name, const Source &source, QJsonObject fields);

    QString m_directory;
    TrackerImportSettings m_settings;
    QTimer m_timer;
    std::map<QString, std::unique_ptr<Source>> m_sources; // by path
    std::map<int, qint64> m_rankPids;
    qint64 m_reportsOffset = 0;
    QByteArray m_reportsPending;
    qint64 m_lastFolderScanMs = -1;
    bool m_running = false;
};

} // namespace accel::trackers
