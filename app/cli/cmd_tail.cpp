// accel tail RUN: the end of a run's rank logs, metrics or launcher events; --follow keeps
// printing as they grow and returns when the run has ended. With --follow --json it prints the
// accel.tail stream (docs/monitor.md) of the whole run directory, which monitor's
// StreamRunSource reads back: the studio runs this over SSH to follow remote runs. A folder of
// node<K> run directories (a multi-node SLURM job's) is followed as one run of all its nodes.
#include "app/cli/argparser.h"
#include "app/cli/command.h"

#include "core/rundir/runlayout.h"
#include "launcher/filefollower.h"
#include "launcher/jsonoutput.h"
#include "launcher/rundirectory.h"
#include "monitor/rundirectoryfollower.h"
#include "monitor/runevent.h"
#include "monitor/tailstream.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

namespace accel::cli {

using namespace accel::launcher;

namespace {

int rankOfFile(const QString &path)
{
    static const QRegularExpression pattern(QStringLiteral("rank(\\d+)\\.(log|jsonl)$"));
    const auto match = pattern.match(path);
    return match.hasMatch() ? match.captured(1).toInt() : -1;
}

QJsonObject lineJson(const QString &kind, const QString &file, const QString &text)
{
    QJsonObject object{
        {QStringLiteral("kind"), kind}, {QStringLiteral("rank"), rankOfFile(file)}, {QStringLiteral("text"), text}};
    if (kind != QLatin1String("logs")) {
        const QJsonDocument parsed = QJsonDocument::fromJson(text.toUtf8());
        if (parsed.isObject())
            object[QStringLiteral("data")] = parsed.object();
    }
    return object;
}

void writeOut(const QByteArray &bytes)
{
    if (bytes.isEmpty())
        return;
    std::fwrite(bytes.constData(), 1, static_cast<size_t>(bytes.size()), stdout);
    std::fflush(stdout);
}

void printWarnings(const QStringList &warnings)
{
    for (const QString &warning : warnings)
        std::fprintf(stderr, "accel tail: warning: %s\n", warning.toLocal8Bit().constData());
}

// A run as `accel tail` follows it: one run directory, or the node folders of a multi-node run
// (a folder without run.json holding node<K>/run.json, as a SLURM job of Accel Studio writes it).
struct FollowedRuns {
    QString root; // the stream's "run": the run directory, or the folder of the nodes
    std::vector<RunDirectory> runs;
    QStringList prefixes; // per run: "" (one run) or "node<K>/"
    bool multiNode() const { return runs.size() > 1 || !prefixes.value(0).isEmpty(); }
};

bool isRankFile(const QString &relativePath)
{
    return (rundir::inMetrics(relativePath.toStdString()) || rundir::inLogs(relativePath.toStdString())) &&
           accel::monitor::rankFromFileName(QFileInfo(relativePath).fileName()) >= 0;
}

// Whether a node's manifest lists `rank` among its ranks.
bool manifestHoldsRank(const QJsonObject &manifest, int rank)
{
    for (const QJsonValue &entry : manifest.value(QStringLiteral("ranks")).toArray()) {
        if (entry.toObject().value(QStringLiteral("rank")).toInt(-1) == rank)
            return true;
    }
    return false;
}

// --follow --json: the accel.tail stream (header, whole-line text chunks per file from each file's
// start, run.json manifests, restarts) until the run has ended. `kind` empty: every file.
// `startOffsets`: files (stream paths) whose stream continues at that byte offset (--from).
// Several nodes: rank files keep their names (their ranks are global, so the nodes' names do not
// meet), the nodes' other files (run.json, events.jsonl, metrics/system.jsonl) go out as
// node<K>/FILE; the stream ends when every node's run has.
int streamRun(FollowedRuns &followed, const QString &kind, int onlyRank, const QHash<QString, qint64> &startOffsets)
{
    int argc = 1;
    char name[] = "accel";
    char *argv[] = {name, nullptr};
    QCoreApplication app(argc, argv);
    const bool multi = followed.multiNode();
    accel::monitor::TailStreamEncoder encoder;
    for (auto it = startOffsets.begin(); it != startOffsets.end(); ++it)
        encoder.setStartOffset(it.key(), it.value());
    writeOut(encoder.header(followed.root));
    QHash<QString, int> owners; // stream path -> the node whose file it carries
    std::vector<std::unique_ptr<accel::monitor::RunDirectoryFollower>> followers;
    for (size_t node = 0; node < followed.runs.size(); ++node) {
        const QString prefix = followed.prefixes.value(static_cast<int>(node));
        // The stream path of a file of this node; a rank file another node sends already keeps its
        // node's prefix (two nodes with the same rank numbers: a job whose ranks are not global).
        auto streamPath = [prefix, node, &owners](const QString &relativePath) {
            if (prefix.isEmpty())
                return relativePath;
            if (isRankFile(relativePath)) {
                const int owner = owners.value(relativePath, static_cast<int>(node));
                if (owner == static_cast<int>(node)) {
                    owners.insert(relativePath, owner);
                    return relativePath;
                }
            }
            return prefix + relativePath;
        };
        auto follower = std::make_unique<accel::monitor::RunDirectoryFollower>(followed.runs[node].path());
        follower->setFileFilter([kind, onlyRank](const QString &relativePath) {
            if (onlyRank >= 0 && accel::monitor::rankFromFileName(QFileInfo(relativePath).fileName()) != onlyRank)
                return false;
            if (kind == QLatin1String("logs"))
                return rundir::inLogs(relativePath.toStdString());
            if (kind == QLatin1String("metrics"))
                return rundir::inMetrics(relativePath.toStdString());
            if (kind == QLatin1String("events"))
                return relativePath == QLatin1String(rundir::file::Events);
            return true;
        });
        QHash<QString, qint64> offsets; // this node's files, by their paths in the node's folder
        for (auto it = startOffsets.begin(); it != startOffsets.end(); ++it) {
            if (!prefix.isEmpty() && it.key().startsWith(prefix))
                offsets.insert(it.key().mid(prefix.size()), it.value());
            else if (prefix.isEmpty() || isRankFile(it.key()))
                offsets.insert(it.key(), it.value());
        }
        follower->setStartOffsets(offsets);
        QObject::connect(follower.get(), &accel::monitor::RunSource::bytesRead, &app,
                         [&encoder, streamPath](const QString &path, const QByteArray &bytes) {
                             writeOut(encoder.encodeBytes(streamPath(path), bytes));
                             printWarnings(encoder.takeWarnings());
                         });
        QObject::connect(follower.get(), &accel::monitor::RunSource::streamRestarted, &app,
                         [&encoder, streamPath](const QString &path, const QString &reason) {
                             writeOut(encoder.encodeRestart(streamPath(path), reason));
                         });
        QObject::connect(follower.get(), &accel::monitor::RunSource::runInfoChanged, &app,
                         [&encoder, multi, prefix, onlyRank](const QJsonObject &manifest) {
                             if (!multi) {
                                 writeOut(encoder.encodeManifest(manifest));
                                 return;
                             }
                             // --rank N on several nodes: only the node holding rank N.
                             if (onlyRank >= 0 && !manifestHoldsRank(manifest, onlyRank))
                                 return;
                             writeOut(QJsonDocument(QJsonObject{{QStringLiteral("file"),
                                                                 prefix + QLatin1String(rundir::file::Manifest)},
                                                                {QStringLiteral("manifest"), manifest}})
                                          .toJson(QJsonDocument::Compact) +
                                      '\n');
                         });
        followers.push_back(std::move(follower));
    }
    QTimer endCheck;
    endCheck.setInterval(200);
    QObject::connect(&endCheck, &QTimer::timeout, &app, [&] {
        for (RunDirectory &run : followed.runs) {
            (void)run.reloadManifest();
            if (!runstate::isFinal(run.effectiveState(true)))
                return;
        }
        endCheck.stop();
        for (auto &follower : followers) {
            follower->pollNow(); // what was written before the final state (and the final run.json)
            follower->stop();
        }
        writeOut(encoder.flush());
        app.exit(ExitOk);
    });
    for (auto &follower : followers)
        follower->start();
    endCheck.start();
    return app.exec();
}

// --from FILE=OFFSET (repeatable): where an earlier accel.tail stream of the same run stopped.
std::optional<QHash<QString, qint64>> parseStartOffsets(const std::vector<std::string> &values)
{
    // A multi-node run's node files carry their node's folder: node1/events.jsonl.
    static const QRegularExpression file(
        QStringLiteral("^(node[0-9]+/)?(events\\.jsonl|metrics/[^/]+\\.jsonl|logs/[^/]+\\.log)$"));
    QHash<QString, qint64> offsets;
    for (const std::string &value : values) {
        const QString text = QString::fromStdString(value);
        const qsizetype equals = text.lastIndexOf(QLatin1Char('='));
        const QString path = text.left(equals);
        bool number = false;
        const qint64 offset = equals < 0 ? -1 : text.mid(equals + 1).toLongLong(&number);
        const bool digits = number && !text.mid(equals + 1).startsWith(QLatin1Char('+'));
        if (equals < 0 || !file.match(path).hasMatch() || path.contains(QLatin1String("..")) || !digits || offset < 0) {
            std::fprintf(stderr,
                         "accel tail: --from %s: expected FILE=OFFSET, FILE one of events.jsonl, "
                         "metrics/NAME.jsonl, logs/NAME.log (node<K>/ before it for a node of a multi-node run) "
                         "and OFFSET a byte offset >= 0 (the \"offset\" of an earlier accel.tail stream)\n",
                         value.c_str());
            return std::nullopt;
        }
        if (offsets.contains(path)) {
            std::fprintf(stderr, "accel tail: --from %s: %s is given twice\n", value.c_str(),
                         path.toLocal8Bit().constData());
            return std::nullopt;
        }
        offsets.insert(path, offset);
    }
    return offsets;
}

// The run named on the command line: a run id or directory, or a folder without run.json whose
// node<K> folders hold run.json (the nodes of a multi-node run: each is followed).
Result<FollowedRuns> openRuns(const QString &argument, const QString &runsRoot)
{
    FollowedRuns followed;
    const QDir folder(argument);
    if (!argument.isEmpty() && QFileInfo(argument).isDir() &&
        !QFileInfo::exists(folder.filePath(QLatin1String(rundir::file::Manifest)))) {
        static const QRegularExpression nodeName(QStringLiteral("^node([0-9]{1,6})$"));
        QList<std::pair<int, QString>> nodes;
        for (const QString &name : folder.entryList({QStringLiteral("node*")}, QDir::Dirs | QDir::NoDotAndDotDot)) {
            const auto match = nodeName.match(name);
            if (match.hasMatch() && QFileInfo::exists(folder.filePath(name + QStringLiteral("/run.json"))))
                nodes.append({match.captured(1).toInt(), name});
        }
        std::sort(nodes.begin(), nodes.end());
        for (const auto &node : nodes) {
            auto run = RunDirectory::open(folder.filePath(node.second), runsRoot);
            if (!run)
                return tl::unexpected(run.error());
            followed.runs.push_back(std::move(*run));
            followed.prefixes << node.second + QLatin1Char('/');
        }
        if (!nodes.isEmpty()) {
            followed.root = folder.absolutePath();
            return followed;
        }
    }
    auto run = RunDirectory::open(argument, runsRoot);
    if (!run)
        return tl::unexpected(run.error());
    followed.root = run->path();
    followed.runs.push_back(std::move(*run));
    followed.prefixes << QString();
    return followed;
}

} // namespace

namespace {

// What to print: the kind of file, one rank or all, how much to start with.
struct TailChoice {
    QString kind = QStringLiteral("logs"); // logs, metrics or events
    int onlyRank = -1;
    int lines = 20;
};

// The files of the chosen kind (rank logs, metrics/*.jsonl, events.jsonl of every node), their
// lines as they grow, printed with a rank or node prefix when several are followed.
class TailPrinter {
public:
    TailPrinter(const FollowedRuns &followed, const TailChoice &choice) : m_followed(followed), m_choice(choice)
    {
        discover();
        m_follower.seekToTail(choice.lines);
        m_prefixRanks = choice.kind == QLatin1String("logs") && m_follower.files().size() > 1;
    }

    FileFollower &follower() { return m_follower; }

    // Adds files that appeared since (a rank file that appears later starts at its beginning).
    void discover()
    {
        QStringList paths;
        for (size_t node = 0; node < m_followed.runs.size(); ++node) {
            const RunDirectory &run = m_followed.runs[node];
            if (m_choice.kind == QLatin1String("events")) {
                paths << run.filePath(QString::fromLatin1(rundir::file::Events));
                if (const QString prefix = m_followed.prefixes.value(static_cast<int>(node)); !prefix.isEmpty())
                    m_nodeOfFile.insert(paths.last(), prefix.chopped(1));
                continue;
            }
            const bool logs = m_choice.kind == QLatin1String("logs");
            const QString folder = run.filePath(QString::fromLatin1(logs ? rundir::file::Logs : rundir::file::Metrics));
            const QString pattern = logs ? QStringLiteral("rank*.log") : QStringLiteral("*.jsonl");
            for (const QString &name : QDir(folder).entryList({pattern}, QDir::Files, QDir::Name)) {
                if (name != QLatin1String(rundir::file::SystemMetrics)) // the supervisor's samples: only in the stream
                    paths << folder + QLatin1Char('/') + name;
            }
        }
        for (const QString &path : paths)
            if ((m_choice.onlyRank < 0 || rankOfFile(path) == m_choice.onlyRank) && !m_follower.files().contains(path))
                m_follower.addFile(path);
    }

    // Prints what the files hold now, in budgets: memory stays bounded whatever they hold.
    void drain()
    {
        do {
            print(m_follower.poll());
            printWarnings(m_follower.takeWarnings());
        } while (m_follower.hasMore());
    }

private:
    void print(const QList<FileFollower::Line> &lines) const
    {
        for (const FileFollower::Line &line : lines) {
            if (const QString node = m_nodeOfFile.value(line.file); !node.isEmpty() && m_followed.runs.size() > 1)
                std::printf("[%s] %s\n", node.toLocal8Bit().constData(), line.text.toLocal8Bit().constData());
            else if (m_prefixRanks)
                std::printf("[rank %d] %s\n", rankOfFile(line.file), line.text.toLocal8Bit().constData());
            else
                std::printf("%s\n", line.text.toLocal8Bit().constData());
        }
        std::fflush(stdout);
    }

    const FollowedRuns &m_followed;
    const TailChoice m_choice;
    FileFollower m_follower;
    QHash<QString, QString> m_nodeOfFile; // several nodes: each events.jsonl's node ("node1")
    bool m_prefixRanks = false;
};

// One accel.tail object: the chosen files' last lines and the run's state.
int printTailJson(TailPrinter &printer, RunDirectory &run, const QString &kind)
{
    const QJsonObject head{{QStringLiteral("schema"), QLatin1String(monitor::TailSchema)},
                           {QStringLiteral("version"), monitor::TailSchemaVersion},
                           {QStringLiteral("id"), run.id()},
                           {QStringLiteral("kind"), kind}};
    QByteArray text = schemaJson(head, true);
    text.chop(1); // the closing brace: "lines" and "state" follow (keys in order)
    writeOut(text + ",\"lines\":[");
    bool first = true;
    FileFollower &follower = printer.follower();
    do {
        for (const FileFollower::Line &line : follower.poll()) {
            writeOut((first ? "" : ",") +
                     QJsonDocument(lineJson(kind, line.file, line.text)).toJson(QJsonDocument::Compact));
            first = false;
        }
        printWarnings(follower.takeWarnings());
    } while (follower.hasMore());
    const QByteArray state =
        QJsonDocument(QJsonObject{{QStringLiteral("state"), run.effectiveState(false)}}).toJson(QJsonDocument::Compact);
    writeOut("]," + state.mid(1) + "\n");
    return ExitOk;
}

// Prints as the files grow until every node's run has ended, then what came last.
int followUntilEnded(TailPrinter &printer, std::vector<RunDirectory> &runs)
{
    for (;;) {
        printer.discover();
        printer.drain();
        bool ended = true;
        for (RunDirectory &run : runs) {
            (void)run.reloadManifest();
            ended = ended && runstate::isFinal(run.effectiveState(true));
        }
        if (ended) {
            printer.discover();
            printer.drain();
            return ExitOk;
        }
        QThread::msleep(200);
    }
}

void addTailOptions(ArgParser &parser)
{
    parser.addPositional({"run", "run id (or unique prefix) or run directory; a folder of node<K> run directories "
                                 "(a multi-node run) follows every node"});
    parser.addValue("runs_root", "DIR", "folder holding run directories",
                    RunDirectory::defaultRunsRoot().toStdString());
    parser.addFlag("follow", "keep printing new lines until the run ends", 'f');
    parser.addFlag("logs", "rank logs (default)");
    parser.addFlag("metrics", "metrics/*.jsonl");
    parser.addFlag("events", "events.jsonl (launcher events)");
    parser.addValue("rank", "N", "only this rank's file");
    parser.addValue("lines", "N", "start with the last N lines of each file (-1: everything)", "20");
    parser.addFlag("json", "JSON output: one accel.tail object, or with --follow the accel.tail stream of the whole "
                           "run (only the chosen kind/rank when --logs/--metrics/--events/--rank are given)");
    parser.addOption({"from",
                      "FILE=OFFSET",
                      "with --follow --json: continue FILE's stream just after OFFSET, the \"offset\" of its last "
                      "text in an earlier stream (repeatable, one per file; other files start at 0)",
                      {},
                      0,
                      true,
                      {}});
}

// --from FILE=OFFSET names a node folder only in a multi-node run.
bool offsetsFitTheRun(const FollowedRuns &followed, const QHash<QString, qint64> &startOffsets)
{
    if (followed.multiNode())
        return true;
    for (auto it = startOffsets.begin(); it != startOffsets.end(); ++it) {
        if (it.key().startsWith(QLatin1String("node"))) {
            std::fprintf(stderr, "accel tail: --from %s: %s is not a multi-node run (no node folders)\n",
                         it.key().toLocal8Bit().constData(), followed.root.toLocal8Bit().constData());
            return false;
        }
    }
    return true;
}

} // namespace

static int runTail(int argc, char **argv)
{
    ArgParser parser("accel tail", "Print the end of a run's logs, metrics or events; --follow streams them.");
    addTailOptions(parser);
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return ExitOk;
        }
        std::fprintf(stderr, "accel tail: %s\n", parser.error().c_str());
        return ExitBadInput;
    }
    const bool kindChosen = parser.isSet("logs") || parser.isSet("metrics") || parser.isSet("events");
    if (int(parser.isSet("logs")) + int(parser.isSet("metrics")) + int(parser.isSet("events")) > 1) {
        std::fprintf(stderr, "accel tail: choose one of --logs, --metrics, --events\n");
        return ExitBadInput;
    }
    const auto startOffsets = parseStartOffsets(parser.values("from"));
    if (!startOffsets)
        return ExitBadInput;
    const bool json = parser.isSet("json");
    const bool follow = parser.isSet("follow");
    if (!startOffsets->isEmpty() && !(json && follow)) {
        std::fprintf(stderr, "accel tail: --from needs --follow --json (it continues an accel.tail stream)\n");
        return ExitBadInput;
    }
    const QString root =
        QString::fromStdString(parser.valueOr("runs_root", RunDirectory::defaultRunsRoot().toStdString()));
    auto followed = openRuns(QString::fromStdString(*parser.firstPositional("run")), root);
    if (!followed) {
        std::fprintf(stderr, "accel tail: %s\n", followed.error().toString().c_str());
        return exitCodeFor(followed.error());
    }
    if (!offsetsFitTheRun(*followed, *startOffsets))
        return ExitBadInput;
    TailChoice choice;
    choice.kind = parser.isSet("metrics")  ? QStringLiteral("metrics")
                  : parser.isSet("events") ? QStringLiteral("events")
                                           : QStringLiteral("logs");
    choice.onlyRank = parser.isSet("rank") ? std::atoi(parser.valueOr("rank", "0").c_str()) : -1;
    choice.lines = std::atoi(parser.valueOr("lines", "20").c_str());
    std::vector<RunDirectory> &runs = followed->runs;
    if (json && !follow && runs.size() > 1) {
        std::fprintf(stderr,
                     "accel tail: %s holds %d nodes' runs: --json without --follow shows one run; give "
                     "--follow, or one node's folder\n",
                     followed->root.toLocal8Bit().constData(), static_cast<int>(runs.size()));
        return ExitBadInput;
    }
    if (json && follow)
        return streamRun(*followed, kindChosen ? choice.kind : QString(), choice.onlyRank, *startOffsets);

    TailPrinter printer(*followed, choice);
    if (follow)
        return followUntilEnded(printer, runs);
    if (json)
        return printTailJson(printer, runs.front(), choice.kind);
    printer.drain();
    return ExitOk;
}

static Registrar registrar({"tail", "print or follow a run's logs, metrics or events", &runTail});

} // namespace accel::cli
