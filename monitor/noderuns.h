// Multi-node runs: a folder of node<K> run directories (one per machine, as a multi-node SLURM job
// of Accel Studio writes them) seen as one run. Each node's run.json has its own state; the run's
// state is decided here and only here, for the Monitor (the accel.tail stream's node manifests)
// and for the Runs page (the nodes' rows of a run catalogue):
//   failed    when any node failed (the first such node is named),
//   lost      when any node's supervisor is gone and none failed,
//   stopped   when any node was stopped and none failed or was lost,
//   running   while any node runs (else the state of the first node still going: starting, ...),
//   succeeded when every node succeeded.
// Pure: no files, no processes.
#pragma once

#include "monitor/runsmodel.h"

#include <QJsonObject>
#include <QList>
#include <QMap>
#include <QString>

namespace accel::monitor {

struct NodeState {
    QString node;  // "node1"
    QString state; // that node's run.json state (empty: not known yet, taken as starting)
};

struct CombinedState {
    QString state; // empty without nodes
    QString node;  // the node that decided a failed, lost or stopped state; empty otherwise
};

CombinedState combineNodeStates(const QList<NodeState> &nodes);

// K of a "node<K>" folder name, -1 for any other name.
int nodeNumber(const QString &folderName);
// K of a stream path "node<K>/FILE" (and FILE in `rest`); -1 for a path outside a node folder.
int nodeOfStreamPath(const QString &relativePath, QString *rest = nullptr);

// The run's manifest from its nodes' (by node number): the lowest node's, with the combined
// "state", every node's "ranks", "nodes": [{"node", "state", "host"}] and, when a node decided the
// state, "decided_by": "node1" and that node's "states" (its last detail prefixed with the node).
QJsonObject combineNodeManifests(const QMap<int, QJsonObject> &manifests);

// One catalogue row for the run in `folder` from its nodes' rows (RunInfo of node<K>/ folders):
// the combined state, the earliest start, the latest end once final, the first node's settings.
RunInfo combineNodeRuns(const QString &folder, const QString &name, const QList<RunInfo> &nodes);

} // namespace accel::monitor
