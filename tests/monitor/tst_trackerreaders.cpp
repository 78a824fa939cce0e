// The trackers' files read by the supervisor (monitor/trackers, docs/trackers.md), written by the
// real packages of the project's Python environment: TensorBoard event files from torch's
// SummaryWriter (simple_value, and the tensor scalars of new_style / double_precision) and from
// tensorboardX, a TensorFlow 2 style tensor_content scalar, MLflow's file store and trackio's
// database. Every scalar the writers logged is read with its step, and nothing else; a record or
// line the writer has not finished is read only once complete; a damaged record is skipped and said.
#include "monitor/trackers/crc32c.h"
#include "monitor/trackers/mlflowrun.h"
#include "monitor/trackers/tensorboardfile.h"
#include "monitor/trackers/trackiodatabase.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <tuple>

using namespace accel;
using namespace accel::trackers;

namespace {

// Writes every tracker's files under argv[1] and prints what it logged:
// {"tensorboard": [[folder, tag, step, value], ...], "mlflow": [...], "trackio": [...]}
// (values as the writers store them: float32 for TensorBoard's float scalars; NaN as null).
const char *kWriters = R"PY(
import json, math, os, struct, sys
import numpy as np
root = sys.argv[1]
logged = {"tensorboard": [], "mlflow": [], "trackio": []}
f32 = lambda v: float(np.float32(v))
def tb(folder, tag, step, value):
    logged["tensorboard"].append([folder, tag, step, None if math.isnan(value) else value])

from torch.utils.tensorboard import SummaryWriter
w = SummaryWriter(os.path.join(root, "torch"))
w.add_scalar("loss", 0.5, 1); tb("torch", "loss", 1, 0.5)
w.add_scalar("loss", 0.1, 2); tb("torch", "loss", 2, f32(0.1))
w.add_scalar("tensor/float", 1.25, 3, new_style=True); tb("torch", "tensor/float", 3, 1.25)
w.add_scalar("tensor/double", 1 / 3, 4, new_style=True, double_precision=True); tb("torch", "tensor/double", 4, 1 / 3)
w.add_text("note", "not a scalar", 5)
w.add_histogram("weights", np.arange(10.0), 5)
w.add_scalars("group", {"a": 1.5, "b": -2.0}, 6); tb("torch", "group/a", 6, 1.5); tb("torch", "group/b", 6, -2.0)
w.add_scalar("nan", float("nan"), 7); tb("torch", "nan", 7, float("nan"))
w.add_scalar("big/step", 2.0, 2**40); tb("torch", "big/step", 2**40, 2.0)
w.close()

import tensorboardX
x = tensorboardX.SummaryWriter(os.path.join(root, "tbx"))
x.add_scalar("loss", 0.125, 1); tb("tbx", "loss", 1, 0.125)
x.add_scalar("count", 3, 2); tb("tbx", "count", 2, 3.0)
x.add_scalar("named", 0.3, 3, display_name="Named", summary_description="with metadata"); tb("tbx", "named", 3, f32(0.3))
x.add_scalars("grp", {"c": 4.0}, 4); tb("tbx", "grp/c", 4, 4.0)
x.add_text("note", "not a scalar", 5)
x.close()

# TensorFlow 2 writes a scalar as a tensor whose value is tensor_content (raw bytes), plugin "scalars".
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
e = EventFileWriter(os.path.join(root, "tf2"))
for step, (dtype, content, value) in enumerate([(types_pb2.DT_FLOAT, struct.pack("<f", 2.5), 2.5),
                                               (types_pb2.DT_DOUBLE, struct.pack("<d", 0.2), 0.2),
                                               (types_pb2.DT_INT64, struct.pack("<q", -7), -7.0)]):
    tensor = tensor_pb2.TensorProto(dtype=dtype, tensor_shape=tensor_shape_pb2.TensorShapeProto(), tensor_content=content)
    meta = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))
    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="tf2/value", tensor=tensor, metadata=meta)])
    e.add_event(event_pb2.Event(wall_time=1.0e9 + step, step=step, summary=summary)); tb("tf2", "tf2/value", step, value)
text = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, tensor_shape=tensor_shape_pb2.TensorShapeProto(), string_val=[b"x"])
e.add_event(event_pb2.Event(wall_time=1.0e9 + 9, step=9, summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="text", tensor=text)])))
e.close()

os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
import mlflow
mlflow.set_tracking_uri("file:" + os.path.join(root, "mlruns"))
with mlflow.start_run() as run:
    for step, value in enumerate([0.5, 0.25, float("nan")]):
        mlflow.log_metric("loss", value, step=step)
        logged["mlflow"].append(["loss", step, None if math.isnan(value) else value])
    mlflow.log_metrics({"eval/acc": 0.75, "lr": 1e-4}, step=10)
    logged["mlflow"] += [["eval/acc", 10, 0.75], ["lr", 10, 1e-4]]

os.environ["TRACKIO_DIR"] = os.path.join(root, "trackio")
import trackio
trackio.init(project="proj", config={"lr": 0.1})
for step in range(3):
    values = {"loss": 1.0 / (step + 1), "flag": step == 1, "nested": {"x": step * 2}, "nan": float("nan"), "text": "t"}
    trackio.log(values, step=step)
    logged["trackio"] += [["loss", step, 1.0 / (step + 1)], ["flag", step, 1.0 if step == 1 else 0.0],
                          ["nested/x", step, float(step * 2)], ["nan", step, None]]
trackio.finish()
print(json.dumps(logged))
)PY";

using Row = std::tuple<QString, QString, qint64, QString>; // folder or "", key, step, value text

QString valueText(double value)
{
    return std::isnan(value) ? QStringLiteral("nan") : QString::number(value, 'g', 15);
}

std::multiset<Row> expectedRows(const QJsonArray &rows, bool withFolder)
{
    std::multiset<Row> expected;
    for (const QJsonValue &entry : rows) {
        const QJsonArray row = entry.toArray();
        const int offset = withFolder ? 1 : 0;
        const QJsonValue value = row.at(offset + 2);
        expected.insert({withFolder ? row.at(0).toString() : QString(), row.at(offset).toString(),
                         static_cast<qint64>(row.at(offset + 1).toDouble()),
                         value.isNull() ? QStringLiteral("nan") : valueText(value.toDouble())});
    }
    return expected;
}

// Every event file under `root`, read whole: rows with the first folder under root.
std::multiset<Row> tensorBoardRows(const QString &root)
{
    std::multiset<Row> rows;
    QDirIterator files(root, {QStringLiteral("events.out.tfevents.*")}, QDir::Files, QDirIterator::Subdirectories);
    while (files.hasNext()) {
        const QString path = files.next();
        const QString folder = QDir(root).relativeFilePath(path).section(QLatin1Char('/'), 0, 0);
        TensorBoardFile file(path);
        const TrackerPoll poll = file.poll();
        if (!poll.problem.isEmpty())
            qWarning("%s: %s", qPrintable(path), qPrintable(poll.problem));
        for (const TrackerSample &sample : poll.samples)
            rows.insert({folder, sample.key, sample.step, valueText(sample.value)});
    }
    return rows;
}

// The writer's own event file in `folder`: its bytes and its scalars read whole.
struct EventFile {
    QString path;
    QByteArray bytes;
    TrackerSamples samples;
};
EventFile eventFileIn(const QString &folder)
{
    EventFile file;
    QDirIterator files(folder, {QStringLiteral("events.out.tfevents.*")}, QDir::Files);
    if (!files.hasNext())
        return file;
    file.path = files.next();
    QFile source(file.path);
    if (source.open(QIODevice::ReadOnly))
        file.bytes = source.readAll();
    file.samples = TensorBoardFile(file.path).poll().samples;
    return file;
}

QString describe(const std::multiset<Row> &rows)
{
    QStringList lines;
    for (const Row &row : rows)
        lines << QStringLiteral("%1 %2 @%3 = %4")
                     .arg(std::get<0>(row), std::get<1>(row))
                     .arg(std::get<2>(row))
                     .arg(std::get<3>(row));
    return lines.join(QLatin1Char('\n'));
}

} // namespace

class tst_TrackerReaders : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QJsonObject m_logged;

private Q_SLOTS:
    void initTestCase()
    {
        const QString python = qEnvironmentVariable("ACCEL_PYTHON");
        if (python.isEmpty() || !QFileInfo(python).isExecutable())
            QSKIP("ACCEL_PYTHON (the project's Python environment) is not there: run packaging/install-deps.sh");
        QVERIFY(m_dir.isValid());
        const auto result =
            test::runProgram(python, {QStringLiteral("-c"), QString::fromUtf8(kWriters), m_dir.path()}, 120000);
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        m_logged = QJsonDocument::fromJson(result.out.trimmed().section(QLatin1Char('\n'), -1).toUtf8()).object();
        QVERIFY2(!m_logged.isEmpty(), qPrintable(result.out));
    }

    void crc32cOfKnownInputs()
    {
        // The check value of CRC-32C, and the masked form TFRecord stores.
        QCOMPARE(crc32c("123456789", 9), 0xe3069283u);
        QCOMPARE(crc32c("", 0), 0u);
        const std::uint32_t crc = crc32c("123456789", 9);
        QCOMPARE(maskedCrc32c("123456789", 9), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
    }

    void everyTensorBoardScalarIsReadAndNothingElse()
    {
        const std::multiset<Row> got = tensorBoardRows(m_dir.path());
        const std::multiset<Row> want = expectedRows(m_logged.value(QStringLiteral("tensorboard")).toArray(), true);
        QVERIFY2(got == want,
                 qPrintable(QStringLiteral("read:\n%1\n\nlogged:\n%2").arg(describe(got), describe(want))));
    }

    // The file grows a byte at a time, as a busy writer's would: after every byte, what has been
    // read is exactly the scalars of the records complete so far.
    void aTornRecordIsReadOnlyWhenComplete()
    {
        const EventFile file = eventFileIn(m_dir.path() + QStringLiteral("/torch"));
        QVERIFY(!file.bytes.isEmpty());
        const QByteArray &bytes = file.bytes;
        const TrackerSamples &whole = file.samples;
        QVERIFY(whole.size() >= 5);

        // The offsets where records end: a record's scalars may be read from there on.
        std::vector<qsizetype> recordEnds;
        for (qsizetype at = 0; at + 12 <= bytes.size();) {
            quint64 length = 0;
            std::memcpy(&length, bytes.constData() + at, 8);
            at += 12 + qsizetype(length) + 4;
            recordEnds.push_back(at);
        }
        QCOMPARE(recordEnds.back(), bytes.size());

        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("events.out.tfevents.1.torn"));
        QFile growing(path);
        QVERIFY(growing.open(QIODevice::WriteOnly | QIODevice::Unbuffered));
        TensorBoardFile reader(path);
        TrackerSamples read;
        for (qsizetype size = 1; size <= bytes.size(); ++size) {
            QCOMPARE(growing.write(bytes.constData() + size - 1, 1), qint64(1));
            const TrackerPoll poll = reader.poll();
            QVERIFY2(poll.problem.isEmpty(), qPrintable(poll.problem));
            read.insert(read.end(), poll.samples.begin(), poll.samples.end());
            const bool atRecordEnd = std::find(recordEnds.begin(), recordEnds.end(), size) != recordEnds.end();
            if (!poll.samples.empty())
                QVERIFY2(atRecordEnd, qPrintable(QStringLiteral("scalars read at byte %1 of a record").arg(size)));
        }
        QCOMPARE(read.size(), whole.size());
        for (size_t i = 0; i < read.size(); ++i) {
            QCOMPARE(read[i].key, whole[i].key);
            QCOMPARE(read[i].step, whole[i].step);
            QCOMPARE(valueText(read[i].value), valueText(whole[i].value));
        }
    }

    void aDamagedRecordIsSkippedAndSaid()
    {
        const EventFile file = eventFileIn(m_dir.path() + QStringLiteral("/tbx"));
        QVERIFY(!file.bytes.isEmpty());
        const QByteArray &bytes = file.bytes;
        const TrackerSamples &whole = file.samples;
        QCOMPARE(whole.size(), size_t(3)); // loss, count, named (grp/c is in its own file)

        // The second record (the first scalar: the first record is the file version) gets a
        // flipped byte in its data: skipped and said, the others read.
        quint64 firstLength = 0;
        std::memcpy(&firstLength, bytes.constData(), 8);
        const qsizetype second = 12 + qsizetype(firstLength) + 4;
        QByteArray damaged = bytes;
        damaged[second + 12 + 3] = char(damaged[second + 12 + 3] ^ 0x40);
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("events.out.tfevents.2.damaged"));
        QFile out(path);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(damaged);
        out.close();
        TrackerPoll poll = TensorBoardFile(path).poll();
        QVERIFY2(poll.problem.contains(QStringLiteral("bad data checksum in the record at byte %1").arg(second)),
                 qPrintable(poll.problem));
        QCOMPARE(poll.samples.size(), whole.size() - 1);
        QCOMPARE(poll.samples.front().key, whole[1].key);

        // A damaged length stops reading there (its records' bounds are unknown), said.
        damaged = bytes;
        damaged[second + 1] = char(damaged[second + 1] ^ 0x01);
        QVERIFY(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
        out.write(damaged);
        out.close();
        poll = TensorBoardFile(path).poll();
        QVERIFY2(poll.problem.contains(QStringLiteral("bad length checksum in the record at byte %1").arg(second)),
                 qPrintable(poll.problem));
        QVERIFY(poll.samples.empty());
    }

    void mlflowFileStoreIsReadLive()
    {
        QString runFolder;
        QDirIterator metas(m_dir.path() + QStringLiteral("/mlruns"), {QStringLiteral("meta.yaml")}, QDir::Files,
                           QDirIterator::Subdirectories);
        while (metas.hasNext()) {
            const QString folder = QFileInfo(metas.next()).absolutePath();
            if (MlflowRun::isRunFolder(folder))
                runFolder = folder;
        }
        QVERIFY(!runFolder.isEmpty());
        MlflowRun run(runFolder);
        std::multiset<Row> got;
        TrackerPoll poll = run.poll();
        QVERIFY2(poll.problem.isEmpty(), qPrintable(poll.problem));
        for (const TrackerSample &sample : poll.samples)
            got.insert({QString(), sample.key, sample.step, valueText(sample.value)});
        const std::multiset<Row> want = expectedRows(m_logged.value(QStringLiteral("mlflow")).toArray(), false);
        QVERIFY2(got == want,
                 qPrintable(QStringLiteral("read:\n%1\n\nlogged:\n%2").arg(describe(got), describe(want))));

        // A line being written is read once its newline is there; nothing is read twice.
        QFile loss(runFolder + QStringLiteral("/metrics/loss"));
        QVERIFY(loss.open(QIODevice::WriteOnly | QIODevice::Append | QIODevice::Unbuffered));
        loss.write("1795000000000 0.12");
        QVERIFY(run.poll().samples.empty());
        loss.write("5 11");
        QVERIFY(run.poll().samples.empty());
        loss.write("\n");
        poll = run.poll();
        QCOMPARE(poll.samples.size(), size_t(1));
        QCOMPARE(poll.samples[0].value, 0.125);
        QCOMPARE(poll.samples[0].step, qint64(11));
        QCOMPARE(poll.samples[0].time, 1795000000.0);
        QVERIFY(run.poll().samples.empty());
    }

    void trackioDatabaseIsRead()
    {
        QVERIFY2(TrackioDatabase::driverAvailable(), "QtSql's SQLite driver (libqt6sql6-sqlite) is missing");
        TrackioDatabase database(m_dir.path() + QStringLiteral("/trackio/proj.db"));
        QCOMPARE(database.schema(), TrackioDatabase::Schema::Trackio);
        std::multiset<Row> got;
        const TrackerPoll poll = database.poll();
        QVERIFY2(poll.problem.isEmpty(), qPrintable(poll.problem));
        for (const TrackerSample &sample : poll.samples) {
            got.insert({QString(), sample.key, sample.step, valueText(sample.value)});
            QVERIFY(sample.time > 1.7e9); // trackio's ISO timestamps, read as Unix seconds
        }
        const std::multiset<Row> want = expectedRows(m_logged.value(QStringLiteral("trackio")).toArray(), false);
        QVERIFY2(got == want,
                 qPrintable(QStringLiteral("read:\n%1\n\nlogged:\n%2").arg(describe(got), describe(want))));
        QVERIFY(database.poll().samples.empty()); // nothing twice

        // Another database is not trackio's.
        TrackioDatabase other(m_dir.path() + QStringLiteral("/trackio/proj.db-missing"));
        QVERIFY(other.schema() != TrackioDatabase::Schema::Trackio);
    }
};

QTEST_GUILESS_MAIN(tst_TrackerReaders)
#include "tst_trackerreaders.moc"
