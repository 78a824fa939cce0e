#include "monitor/trackers/mlflowrun.h"

#include "core/common/fileutil.h"

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <utility>

namespace accel::trackers {

namespace {

constexpr qint64 kReadBudget = qint64(1) << 20; // per metric file and poll
constexpr qsizetype kMaximumLine = 4096;

// "1763771234512 0.25 7" -> sample; false for anything else.
bool parseLine(const QByteArray &line, TrackerSample &sample)
{
    const QList<QByteArray> fields = line.trimmed().split(' ');
    if (fields.size() != 2 && fields.size() != 3)
        return false;
    bool ok = false;
    const qint64 milliseconds = fields[0].toLongLong(&ok);
    if (!ok)
        return false;
    const std::string text = fields[1].toStdString();
    char *end = nullptr;
    const double value = std::strtod(text.c_str(), &end); // also "nan", "inf", "-inf" as Python prints them
    if (text.empty() || *end != '\0')
        return false;
    qint64 step = 0;
    if (fields.size() == 3) {
        step = fields[2].toLongLong(&ok);
        if (!ok)
            return false;
    }
    sample.value = value;
    sample.step = step;
    sample.time = double(milliseconds) / 1000.0;
    return true;
}

} // namespace

MlflowRun::MlflowRun(QString runFolder) : m_folder(std::move(runFolder)) {}

bool MlflowRun::isRunFolder(const QString &folder)
{
    const QDir dir(folder);
    return QFileInfo(dir.filePath(QStringLiteral("meta.yaml"))).isFile() &&
           QFileInfo(dir.filePath(QStringLiteral("metrics"))).isDir();
}

TrackerPoll MlflowRun::poll()
{
    TrackerPoll poll;
    const QString metrics = m_folder + QStringLiteral("/metrics");
    QDirIterator files(metrics, QDir::Files | QDir::NoSymLinks | QDir::Hidden, QDirIterator::Subdirectories);
    while (files.hasNext()) {
        const QString path = files.next();
        const QString key = QDir(metrics).relativeFilePath(path);
        MetricFile &state = m_files[key];
        auto fd = fileutil::openRegularFile(path.toStdString());
        if (!fd)
            continue; // removed in between
        struct stat info {};
        ::fstat(*fd, &info);
        if (info.st_size < state.offset) { // rewritten: read again
            state.offset = 0;
            state.pending.clear();
        }
        const qint64 available = std::min<qint64>(info.st_size - state.offset, kReadBudget);
        QByteArray bytes(available, Qt::Uninitialized);
        const ssize_t got = available > 0 ? ::pread(*fd, bytes.data(), size_t(available), state.offset) : 0;
        ::close(*fd);
        if (got <= 0)
            continue;
        bytes.truncate(got);
        state.offset += got;
        state.pending += bytes;
        qsizetype start = 0;
        for (qsizetype newline = state.pending.indexOf('\n'); newline >= 0;
             newline = state.pending.indexOf('\n', start)) {
            TrackerSample sample;
            sample.key = key;
            if (parseLine(state.pending.mid(start, newline - start), sample))
                poll.samples.push_back(std::move(sample));
            else if (newline > start)
                poll.problem =
                    QStringLiteral("metrics/%1: a line that is not '<timestamp> <value> <step>' was skipped").arg(key);
            start = newline + 1;
        }
        state.pending.remove(0, start);
        if (state.pending.size() > kMaximumLine) {
            poll.problem =
                QStringLiteral("metrics/%1: a line longer than %2 bytes was skipped").arg(key).arg(kMaximumLine);
            state.pending.clear();
        }
    }
    return poll;
}

} // namespace accel::trackers
