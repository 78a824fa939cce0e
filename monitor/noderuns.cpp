#include "monitor/noderuns.h"

#include "core/rundir/runlayout.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QRegularExpression>

#include <algorithm>

namespace accel::monitor {

namespace {

const QString kFailed = QString::fromLatin1(rundir::state::Failed);
const QString kLost = QString::fromLatin1(rundir::state::Lost);
const QString kStopped = QString::fromLatin1(rundir::state::Stopped);
const QString kSucceeded = QString::fromLatin1(rundir::state::Succeeded);
const QString kRunning = QString::fromLatin1(rundir::state::Running);

} // namespace

CombinedState combineNodeStates(const QList<NodeState> &nodes)
{
    if (nodes.isEmpty())
        return {};
    auto first = [&nodes](const QString &state) -> const NodeState * {
        for (const NodeState &node : nodes) {
            if (node.state == state)
                return &node;
        }
        return nullptr;
    };
    for (const QString &state : {kFailed, kLost, kStopped}) {
        if (const NodeState *node = first(state))
            return {state, node->node};
    }
    if (first(kRunning))
        return {kRunning, {}};
    for (const NodeState &node : nodes) {
        if (node.state != kSucceeded) // still going: starting, restarting, stopping (or not known yet)
            return {node.state.isEmpty() ? QString::fromLatin1(rundir::state::Starting) : node.state, {}};
    }
    return {kSucceeded, {}};
}

int nodeNumber(const QString &folderName)
{
    static const QRegularExpression name(QStringLiteral("^node([0-9]{1,6})$"));
    const QRegularExpressionMatch match = name.match(folderName);
    return match.hasMatch() ? match.captured(1).toInt() : -1;
}

int nodeOfStreamPath(const QString &relativePath, QString *rest)
{
    const qsizetype slash = relativePath.indexOf(QLatin1Char('/'));
    if (slash < 0)
        return -1;
    const int node = nodeNumber(relativePath.left(slash));
    if (node >= 0 && rest)
        *rest = relativePath.mid(slash + 1);
    return node;
}

QJsonObject combineNodeManifests(const QMap<int, QJsonObject> &manifests)
{
    if (manifests.isEmpty())
        return {};
    QList<NodeState> states;
    QJsonArray nodes;
    QJsonArray ranks;
    for (auto it = manifests.cbegin(); it != manifests.cend(); ++it) {
        const QString node = QStringLiteral("node%1").arg(it.key());
        const QString state = it.value().value(QLatin1String("state")).toString();
        states.append({node, state});
        nodes.append(QJsonObject{{QStringLiteral("node"), node},
                                 {QStringLiteral("state"), state},
                                 {QStringLiteral("host"), it.value().value(QLatin1String("host"))}});
        for (const QJsonValue &rank : it.value().value(QLatin1String("ranks")).toArray())
            ranks.append(rank);
    }
    const CombinedState combined = combineNodeStates(states);
    QJsonObject out = manifests.first();
    out.insert(QStringLiteral("state"), combined.state);
    out.insert(QStringLiteral("ranks"), ranks);
    out.insert(QStringLiteral("nodes"), nodes);
    if (!combined.node.isEmpty()) {
        out.insert(QStringLiteral("decided_by"), combined.node);
        // The deciding node's state history, so "Failed: <detail>" says which node it was.
        QJsonArray history = manifests.value(nodeNumber(combined.node)).value(QLatin1String("states")).toArray();
        if (!history.isEmpty()) {
            QJsonObject last = history.last().toObject();
            const QString detail = last.value(QLatin1String("detail")).toString();
            last.insert(QStringLiteral("detail"), detail.isEmpty()
                                                      ? QStringLiteral("%1 %2").arg(combined.node, combined.state)
                                                      : QStringLiteral("%1: %2").arg(combined.node, detail));
            history.replace(history.size() - 1, last);
        }
        out.insert(QStringLiteral("states"), history);
    }
    return out;
}

RunInfo combineNodeRuns(const QString &folder, const QString &name, const QList<RunInfo> &nodes)
{
    RunInfo out;
    out.path = folder;
    out.id = QFileInfo(folder).fileName();
    out.name = name;
    QList<RunInfo> sorted = nodes;
    std::sort(sorted.begin(), sorted.end(),
              [](const RunInfo &a, const RunInfo &b) { return nodeNumber(a.id) < nodeNumber(b.id); });
    QList<NodeState> states;
    for (const RunInfo &node : std::as_const(sorted)) {
        states.append({node.id, node.state});
        if (node.created > 0 && (out.created <= 0 || node.created < out.created))
            out.created = node.created;
        out.ended = std::max(out.ended, node.ended);
    }
    out.state = combineNodeStates(states).state;
    if (!out.isFinal())
        out.ended = 0;
    if (!sorted.isEmpty()) {
        out.location = sorted.first().location;
        out.host = sorted.first().host;
        out.configSummary = sorted.first().configSummary;
        out.manifest = sorted.first().manifest;
    }
    return out;
}

} // namespace accel::monitor
