#include "app/cli/stackreport.h"

#include "core/rundir/runlayout.h"

#include <QDateTime>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

#include <algorithm>

namespace accel::cli {

namespace {

// Frames of the Python interpreter's own library and installed packages; the first frame outside
// them, from the innermost, is the user's code.
bool isLibraryFile(const QString &file)
{
    return file.contains(QLatin1String("/site-packages/")) || file.contains(QLatin1String("/dist-packages/")) ||
           file.contains(QLatin1String("/lib/python")) || file.startsWith(QLatin1Char('<'));
}

// Decorators between the user's call and the collective (torch.distributed's logging wrapper,
// which py-spy names by its qualified name "_exception_logger.<locals>.wrapper").
bool isWrapperName(const QString &name)
{
    static const QStringList wrappers{QStringLiteral("wrapper"), QStringLiteral("inner"), QStringLiteral("_fn"),
                                      QStringLiteral("decorate_context")};
    return wrappers.contains(name.section(QLatin1Char('.'), -1));
}

QString fileAndLine(const StackFrame &frame)
{
    return QFileInfo(frame.file).fileName() + QLatin1Char(':') + QString::number(frame.line);
}

QJsonObject frameJson(const StackFrame &frame)
{
    QJsonObject object;
    if (!frame.function.isEmpty())
        object.insert(QStringLiteral("function"), frame.function);
    if (!frame.file.isEmpty()) {
        object.insert(QStringLiteral("file"), frame.file);
        object.insert(QStringLiteral("line"), frame.line);
    }
    if (!frame.object.isEmpty())
        object.insert(QStringLiteral("object"), frame.object);
    if (!frame.offset.isEmpty())
        object.insert(QStringLiteral("offset"), frame.offset);
    return object;
}

QString frameText(const StackFrame &frame)
{
    QString name = frame.function.isEmpty() ? QStringLiteral("??") : frame.function;
    QString text = frame.object.isEmpty() ? name : QStringLiteral("%1 [%2+%3]").arg(name, frame.object, frame.offset);
    if (!frame.file.isEmpty())
        text += QStringLiteral(" (%1:%2)").arg(frame.file).arg(frame.line);
    return text;
}

// "NCCL flight recorder: 12 entries; last: nccl:all_reduce #12 started" (docs/hang-autopsy.md).
QString flightRecorderSummary(const RankStack &stack)
{
    const QJsonObject &recorder = stack.ncclFlightRecorder;
    if (recorder.contains(QStringLiteral("error")))
        return QStringLiteral("NCCL flight recorder: ") + recorder.value(QStringLiteral("error")).toString();
    const QJsonArray entries = recorder.value(QStringLiteral("entries")).toArray();
    QString text = QStringLiteral("NCCL flight recorder: %1 entries").arg(entries.size());
    if (!entries.isEmpty()) {
        const QJsonObject last = entries.last().toObject();
        text += QStringLiteral("; last: %1 #%2 %3")
                    .arg(last.value(QStringLiteral("profiling_name")).toString())
                    .arg(last.value(QStringLiteral("collective_seq_id")).toVariant().toLongLong())
                    .arg(last.value(QStringLiteral("state")).toString());
    }
    return text;
}

bool sameStack(const RankStack &a, const RankStack &b)
{
    if (a.kind != b.kind || a.error != b.error || a.collective != b.collective || a.sequence != b.sequence ||
        a.waiting != b.waiting || a.frames.size() != b.frames.size())
        return false;
    for (int i = 0; i < a.frames.size(); ++i) {
        const StackFrame &x = a.frames.at(i), &y = b.frames.at(i);
        if (x.function != y.function || x.file != y.file || x.line != y.line || x.object != y.object ||
            (x.function.isEmpty() && x.offset != y.offset))
            return false;
    }
    return true;
}

} // namespace

Result<RankStack> parsePySpyDump(const QByteArray &json, qint64 pid)
{
    QJsonParseError error{};
    const QJsonDocument document = QJsonDocument::fromJson(json, &error);
    if (!document.isArray() || document.array().isEmpty())
        return makeError(ErrorCode::InvalidInput,
                         "py-spy printed no thread list" +
                             (error.error ? ": " + error.errorString().toStdString() : std::string()));
    QJsonObject thread = document.array().first().toObject();
    for (const QJsonValue &value : document.array()) {
        if (value.toObject().value(QStringLiteral("os_thread_id")).toDouble() == double(pid)) {
            thread = value.toObject();
            break;
        }
    }
    RankStack stack;
    stack.pid = pid;
    stack.kind = QStringLiteral("python");
    for (const QJsonValue &value : thread.value(QStringLiteral("frames")).toArray()) {
        const QJsonObject object = value.toObject();
        stack.frames.append({object.value(QStringLiteral("name")).toString(),
                             object.value(QStringLiteral("filename")).toString(),
                             object.value(QStringLiteral("line")).toInt(), QString(), QString(), QString(), QString()});
    }
    // The collective: the outermost library frame the user's code called, past wrappers.
    for (int i = 0; i < stack.frames.size(); ++i) {
        if (isLibraryFile(stack.frames.at(i).file))
            continue;
        for (int j = i - 1; j >= 0; --j) {
            if (!isWrapperName(stack.frames.at(j).function)) {
                stack.collective = stack.frames.at(j).function;
                break;
            }
        }
        break;
    }
    return stack;
}

Result<RankStack> parseNativeStack(const QByteArray &json)
{
    const QJsonObject object = QJsonDocument::fromJson(json).object();
    if (object.value(QStringLiteral("schema")).toString() != QLatin1String(rundir::NativeStackSchema))
        return makeError(ErrorCode::InvalidInput, std::string("not an ") + rundir::NativeStackSchema + " document");
    RankStack stack;
    stack.kind = QStringLiteral("native");
    stack.rank = object.value(QStringLiteral("rank")).toInt(-1);
    stack.pid = static_cast<qint64>(object.value(QStringLiteral("pid")).toDouble());
    const QJsonObject collective = object.value(QStringLiteral("collective")).toObject();
    stack.collective = collective.value(QStringLiteral("name")).toString();
    stack.sequence = static_cast<qint64>(collective.value(QStringLiteral("sequence")).toDouble());
    stack.waiting = collective.value(QStringLiteral("waiting")).toBool();
    stack.ncclFlightRecorder = object.value(QStringLiteral("nccl_flight_recorder")).toObject();
    for (const QJsonValue &value : object.value(QStringLiteral("frames")).toArray()) {
        const QJsonObject frame = value.toObject();
        stack.frames.append(
            {frame.value(QStringLiteral("function")).toString(), QString(), 0,
             frame.value(QStringLiteral("object")).toString(), frame.value(QStringLiteral("offset")).toString(),
             frame.value(QStringLiteral("path")).toString(), frame.value(QStringLiteral("object_offset")).toString()});
    }
    return stack;
}

QString stackSummary(const RankStack &stack)
{
    if (!stack.error.isEmpty())
        return QStringLiteral("no stack: ") + stack.error;
    if (stack.kind == QLatin1String("native")) {
        QString text = stack.collective.isEmpty()
                           ? QStringLiteral("in no collective")
                           : QStringLiteral("%1 %2 #%3")
                                 .arg(stack.waiting ? QStringLiteral("in") : QStringLiteral("after"), stack.collective)
                                 .arg(stack.sequence);
        // The innermost frame of the runtime or the worker: where it waits, in our code; with source
        // lines, the innermost one whose line is in our sources (not a system header's inlined code).
        auto ours = [](const StackFrame &frame) { return frame.function.startsWith(QLatin1String("accel::")); };
        auto inSources = [&](const StackFrame &frame) {
            return ours(frame) && !frame.file.isEmpty() && !frame.file.startsWith(QLatin1String("/usr/"));
        };
        auto at = std::find_if(stack.frames.begin(), stack.frames.end(), inSources);
        if (at == stack.frames.end())
            at = std::find_if(stack.frames.begin(), stack.frames.end(), ours);
        if (at != stack.frames.end()) {
            text += QStringLiteral(" at ") + at->function;
            if (inSources(*at))
                text += QStringLiteral(" (%1)").arg(fileAndLine(*at));
        }
        return text;
    }
    for (const StackFrame &frame : stack.frames) {
        if (isLibraryFile(frame.file))
            continue;
        return (stack.collective.isEmpty() ? QStringLiteral("in ") + frame.function
                                           : QStringLiteral("in ") + stack.collective) +
               QStringLiteral(" at ") + fileAndLine(frame);
    }
    return stack.frames.isEmpty() ? QStringLiteral("no Python frames")
                                  : QStringLiteral("in ") + stack.frames.first().function + QStringLiteral(" at ") +
                                        fileAndLine(stack.frames.first());
}

QList<StackGroup> groupStacks(const QList<RankStack> &stacks)
{
    QList<RankStack> sorted = stacks;
    std::sort(sorted.begin(), sorted.end(), [](const RankStack &a, const RankStack &b) { return a.rank < b.rank; });
    QList<StackGroup> groups;
    for (const RankStack &stack : sorted) {
        auto it = std::find_if(groups.begin(), groups.end(),
                               [&](const StackGroup &group) { return sameStack(group.stack, stack); });
        if (it != groups.end())
            it->ranks.append(stack.rank);
        else
            groups.append({{stack.rank}, stack});
    }
    return groups;
}

QString rankList(const QList<int> &ranks)
{
    QStringList parts;
    for (int i = 0; i < ranks.size();) {
        int j = i;
        while (j + 1 < ranks.size() && ranks.at(j + 1) == ranks.at(j) + 1)
            ++j;
        parts << (j > i ? QStringLiteral("%1-%2").arg(ranks.at(i)).arg(ranks.at(j)) : QString::number(ranks.at(i)));
        i = j + 1;
    }
    return (ranks.size() > 1 ? QStringLiteral("ranks ") : QStringLiteral("rank ")) + parts.join(QStringLiteral(", "));
}

QString stackReportText(const QList<StackGroup> &groups, const QString &runId, const QString &reason)
{
    QString text = QStringLiteral("%1: %2 group(s) of stacks (%3)\n").arg(runId).arg(groups.size()).arg(reason);
    for (const StackGroup &group : groups)
        text += QStringLiteral("  %1 %2\n").arg(rankList(group.ranks), stackSummary(group.stack));
    for (const StackGroup &group : groups) {
        if (!group.stack.ncclFlightRecorder.isEmpty())
            text += QStringLiteral("  rank %1: %2\n").arg(group.ranks.first()).arg(flightRecorderSummary(group.stack));
    }
    for (const StackGroup &group : groups) {
        if (group.stack.frames.isEmpty())
            continue;
        text += QStringLiteral("\n%1 (%2, innermost first):\n").arg(rankList(group.ranks), group.stack.kind);
        for (const StackFrame &frame : group.stack.frames)
            text += QStringLiteral("    ") + frameText(frame) + QLatin1Char('\n');
    }
    return text;
}

QJsonObject stackReportJson(const QList<StackGroup> &groups, const QList<RankStack> &stacks, const QString &runId,
                            const QString &reason)
{
    QJsonArray groupArray;
    for (const StackGroup &group : groups) {
        QJsonArray ranks, frames;
        for (int rank : group.ranks)
            ranks.append(rank);
        for (const StackFrame &frame : group.stack.frames)
            frames.append(frameJson(frame));
        QJsonObject object{{QStringLiteral("ranks"), ranks},
                           {QStringLiteral("kind"), group.stack.kind},
                           {QStringLiteral("summary"), stackSummary(group.stack)},
                           {QStringLiteral("frames"), frames}};
        if (!group.stack.collective.isEmpty())
            object.insert(QStringLiteral("collective"), group.stack.collective);
        if (group.stack.kind == QLatin1String("native") && group.stack.sequence > 0) {
            object.insert(QStringLiteral("sequence"), group.stack.sequence);
            object.insert(QStringLiteral("waiting"), group.stack.waiting);
        }
        if (!group.stack.error.isEmpty())
            object.insert(QStringLiteral("error"), group.stack.error);
        groupArray.append(object);
    }
    QJsonArray rankArray;
    for (const RankStack &stack : stacks) {
        QJsonObject object{{QStringLiteral("rank"), stack.rank},
                           {QStringLiteral("pid"), stack.pid},
                           {QStringLiteral("kind"), stack.kind}};
        if (!stack.error.isEmpty())
            object.insert(QStringLiteral("error"), stack.error);
        if (!stack.ncclFlightRecorder.isEmpty())
            object.insert(QStringLiteral("nccl_flight_recorder"), stack.ncclFlightRecorder);
        rankArray.append(object);
    }
    return {{QStringLiteral("schema"), QLatin1String(StackSchema)},
            {QStringLiteral("version"), StackVersion},
            {QStringLiteral("id"), runId},
            {QStringLiteral("reason"), reason},
            {QStringLiteral("time"), QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs)},
            {QStringLiteral("groups"), groupArray},
            {QStringLiteral("ranks"), rankArray}};
}

} // namespace accel::cli
