#include "monitor/trackers/trackerimport.h"

#include "core/rundir/privatefiles.h"
#include "core/rundir/runlayout.h"
#include "monitor/detectors.h"
#include "monitor/trackers/mlflowrun.h"
#include "monitor/trackers/tensorboardfile.h"
#include "monitor/trackers/trackerhook.h"
#include "monitor/trackers/trackiodatabase.h"

#include <QDateTime>
#include <QDir>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <utility>

namespace accel::trackers {

namespace {

constexpr qint64 kFolderScanIntervalMs = 5000;
constexpr int kFolderScanDepth = 6;
constexpr int kFolderScanEntries = 20000;
// An SQLite database a rank opened that has not shown trackio's table after this long is not one.
constexpr qint64 kSchemaPatienceMs = 60000;

// Keys of the metrics format itself (docs/metrics.md): a tracker's scalar of that name is not written.
bool isReservedKey(const QString &key)
{
    return key == QLatin1String("v") || key == QLatin1String("time") || key == QLatin1String("rank") ||
           key == QLatin1String("step") || key == QLatin1String("kind");
}

QByteArray jsonString(const QString &text)
{
    const QByteArray array = QJsonDocument(QJsonArray{text}).toJson(QJsonDocument::Compact); // ["text"]
    return array.mid(1, array.size() - 2);
}

// The shortest text that reads back to the value (as a float32 when it was stored as one: 0.1, not
// 0.10000000149011612); non-finite values are null (docs/metrics.md).
QByteArray jsonNumber(double value, bool singlePrecision)
{
    if (!std::isfinite(value))
        return QByteArrayLiteral("null");
    char text[64];
    const std::to_chars_result written = singlePrecision ? std::to_chars(text, text + sizeof text, float(value))
                                                         : std::to_chars(text, text + sizeof text, value);
    return QByteArray(text, written.ptr - text);
}

qint64 nowMs()
{
    return QDateTime::currentMSecsSinceEpoch();
}

} // namespace

struct TrackerImport::Source {
    QString kind; // tensorboard, mlflow, trackio (sqlite until its tables say)
    QString path;
    int rank = 0;
    std::unique_ptr<TrackerSource> reader;
    TrackioDatabase *database = nullptr; // reader, while its schema is not known
    qint64 foundMs = 0;
    bool announced = false;
    std::set<QString> problems; // reported once each
};

TrackerImport::TrackerImport(const QString &runDirectory, TrackerImportSettings settings, QObject *parent)
    : QObject(parent), m_directory(runDirectory), m_settings(std::move(settings))
{
    m_timer.setInterval(m_settings.intervalMs);
    connect(&m_timer, &QTimer::timeout, this, [this] { pollNow(); });
}

TrackerImport::~TrackerImport() = default;

void TrackerImport::start()
{
    m_running = true;
    m_timer.start();
}

void TrackerImport::stop()
{
    if (!m_running)
        return;
    pollNow(true);
    m_running = false;
    m_timer.stop();
}

void TrackerImport::rankStarted(int rank, qint64 pid)
{
    m_rankPids[rank] = pid;
}

void TrackerImport::rankExited(int rank)
{
    m_rankPids.erase(rank);
    if (m_running)
        pollNow(true);
}

void TrackerImport::pollNow(bool searchFolders)
{
    if (m_settings.discover) {
        readReports();
        scanOpenFiles();
    }
    if (!m_settings.folders.isEmpty() &&
        (searchFolders || m_lastFolderScanMs < 0 || nowMs() - m_lastFolderScanMs >= kFolderScanIntervalMs)) {
        m_lastFolderScanMs = nowMs();
        scanFolders();
    }
    readSources();
}

std::map<QString, QStringList> TrackerImport::sources() const
{
    std::map<QString, QStringList> found;
    for (const auto &entry : m_sources) {
        if (entry.second->reader)
            found[entry.second->kind] << entry.first;
    }
    return found;
}

void TrackerImport::addSource(const QString &kind, const QString &path, int rank)
{
    const QString canonical = QFileInfo(path).canonicalFilePath();
    const QString key = canonical.isEmpty() ? QDir::cleanPath(path) : canonical;
    if (m_sources.count(key))
        return;
    auto source = std::make_unique<Source>();
    source->kind = kind;
    source->path = key;
    source->rank = rank;
    source->foundMs = nowMs();
    if (kind == QLatin1String("tensorboard")) {
        source->reader = std::make_unique<TensorBoardFile>(key);
    } else if (kind == QLatin1String("mlflow")) {
        source->reader = std::make_unique<MlflowRun>(key);
    } else {
        auto database = std::make_unique<TrackioDatabase>(key);
        source->database = database.get();
        source->reader = std::move(database);
        source->kind = QStringLiteral("sqlite");
    }
    m_sources.emplace(key, std::move(source));
}

void TrackerImport::readReports()
{
    auto fd = rundir::openRunFile(m_directory.toStdString(), rundir::file::TrackerReports, rundir::OpenFor::Read);
    if (!fd)
        return; // none yet
    struct stat info {};
    ::fstat(*fd, &info);
    const qint64 available = std::min<qint64>(info.st_size - m_reportsOffset, qint64(1) << 20);
    QByteArray bytes(std::max<qint64>(available, 0), Qt::Uninitialized);
    const ssize_t got = available > 0 ? ::pread(*fd, bytes.data(), size_t(available), m_reportsOffset) : 0;
    ::close(*fd);
    if (got <= 0)
        return;
    bytes.truncate(got);
    m_reportsOffset += got;
    m_reportsPending += bytes;
    qsizetype start = 0;
    for (qsizetype newline = m_reportsPending.indexOf('\n'); newline >= 0;
         newline = m_reportsPending.indexOf('\n', start)) {
        if (const auto report = parseTrackerReport(m_reportsPending.mid(start, newline - start)))
            addSource(report->kind, report->path, report->rank);
        start = newline + 1;
    }
    m_reportsPending.remove(0, start);
}

void TrackerImport::scanOpenFiles()
{
    for (const auto &[rank, pid] : m_rankPids) {
        const QString folder = QStringLiteral("/proc/%1/fd").arg(pid);
        const QStringList names = QDir(folder).entryList(QDir::AllEntries | QDir::System | QDir::NoDotAndDotDot);
        for (const QString &name : names) {
            const QString target = QFileInfo(folder + QLatin1Char('/') + name).symLinkTarget();
            if (isTensorBoardEventFile(QFileInfo(target).fileName()) && QFileInfo(target).isFile())
                addSource(QStringLiteral("tensorboard"), target, rank);
        }
    }
}

void TrackerImport::scanFolders()
{
    for (const QString &folder : m_settings.folders) {
        if (MlflowRun::isRunFolder(folder))
            addSource(QStringLiteral("mlflow"), folder, 0);
        QDirIterator entries(folder, QDir::AllEntries | QDir::NoDotAndDotDot | QDir::NoSymLinks | QDir::Hidden,
                             QDirIterator::Subdirectories);
        const int baseDepth = QDir::cleanPath(folder).count(QLatin1Char('/'));
        int seen = 0;
        while (entries.hasNext() && ++seen <= kFolderScanEntries) {
            const QString path = entries.next();
            const QFileInfo info = entries.fileInfo();
            if (QDir::cleanPath(path).count(QLatin1Char('/')) - baseDepth > kFolderScanDepth)
                continue;
            if (info.isDir()) {
                if (MlflowRun::isRunFolder(path))
                    addSource(QStringLiteral("mlflow"), path, 0);
            } else if (isTensorBoardEventFile(info.fileName())) {
                addSource(QStringLiteral("tensorboard"), path, 0);
            } else if (info.suffix() == QLatin1String("db")) {
                addSource(QStringLiteral("sqlite"), path, 0);
            }
        }
    }
}

void TrackerImport::readSources()
{
    for (auto it = m_sources.begin(); it != m_sources.end();) {
        Source &source = *it->second;
        if (source.database) { // a database: trackio's only when its tables say so
            const TrackioDatabase::Schema schema = source.database->schema();
            if (schema == TrackioDatabase::Schema::Other ||
                (schema == TrackioDatabase::Schema::NotYet && nowMs() - source.foundMs > kSchemaPatienceMs)) {
                it = m_sources.erase(it);
                continue;
            }
            if (schema == TrackioDatabase::Schema::NotYet) {
                ++it;
                continue;
            }
            source.kind = QStringLiteral("trackio");
            source.database = nullptr;
        }
        if (!source.announced) {
            source.announced = true;
            appendEvent(monitor::eventName(rundir::EventKind::TrackerFound), source, {});
        }
        TrackerPoll poll = source.reader->poll();
        if (!poll.problem.isEmpty())
            reportProblem(source, poll.problem);
        TrackerSamples fresh;
        fresh.reserve(poll.samples.size());
        for (TrackerSample &sample : poll.samples) {
            if (sample.time >= m_settings.since && !isReservedKey(sample.key))
                fresh.push_back(std::move(sample));
        }
        writeSamples(source.rank, fresh);
        ++it;
    }
}

void TrackerImport::reportProblem(Source &source, const QString &problem)
{
    if (!source.problems.insert(problem).second)
        return;
    appendEvent(monitor::eventName(rundir::EventKind::TrackerProblem), source,
                QJsonObject{{QStringLiteral("problem"), problem}});
}

void TrackerImport::appendEvent(const QString &name, const Source &source, QJsonObject fields)
{
    monitor::RunEvent event;
    event.time = double(nowMs()) / 1000.0;
    event.event = name;
    event.rank = source.rank;
    fields.insert(QStringLiteral("kind"), source.kind);
    fields.insert(QStringLiteral("path"), source.path);
    event.fields = fields;
    monitor::eventsFileWriter(m_directory)(event);
}

void TrackerImport::writeSamples(int rank, const TrackerSamples &samples)
{
    if (samples.empty())
        return;
    // Consecutive samples of one step share a line (a step's scalars arrive together); a key seen
    // twice in a step starts a new line.
    QByteArray lines;
    QByteArray line;
    std::set<QString> keys;
    qint64 step = 0;
    double time = 0;
    auto flush = [&] {
        if (keys.empty())
            return;
        lines += "{\"v\":1,\"time\":" + QByteArray::number(time, 'f', 6) + ",\"rank\":" + QByteArray::number(rank) +
                 ",\"step\":" + QByteArray::number(step) + line + "}\n";
        line.clear();
        keys.clear();
    };
    for (const TrackerSample &sample : samples) {
        if (!keys.empty() && (sample.step != step || keys.count(sample.key)))
            flush();
        if (keys.empty()) {
            step = sample.step;
            time = sample.time;
        }
        time = std::max(time, sample.time);
        keys.insert(sample.key);
        line += ',' + jsonString(sample.key) + ':' + jsonNumber(sample.value, sample.singlePrecision);
    }
    flush();
    lines.chop(1); // appendRunLine adds the last newline; one write for all lines
    QDir(m_directory).mkpath(QLatin1String(rundir::file::Metrics));
    (void)rundir::appendRunLine(m_directory.toStdString(), rundir::metricsFile(rank), lines.toStdString());
}

} // namespace accel::trackers
