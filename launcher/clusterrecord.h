// The records `accel hosts launch` (and `accel launch --hosts`, so also the studio's Launch page)
// keeps of every cluster launch: <data>/accel-studio/clusters/<id>.json beside the runs root,
// schema accel.cluster-run version 1 (docs/remote.md): the hosts in machine-rank order with the run
// each one started and where that run's directory is on that host. Declared here once; the CLI
// writes them, the studio reads them to list and re-attach the runs still going.
#pragma once

#include "core/common/result.h"

#include <QList>
#include <QString>

namespace accel::launcher {

// The "schema" and "version" of a record file, which cmd_hosts_launch.cpp writes.
inline constexpr const char *ClusterRecordSchema = "accel.cluster-run";
inline constexpr int ClusterRecordVersion = 1;

struct ClusterRecordNode {
    QString host; // the destination as given to accel hosts launch
    int machineRank = 0;
    QString runId;
    QString runDir; // on that host
};

struct ClusterRecord {
    QString path;
    QString created; // ISO 8601, UTC
    QList<ClusterRecordNode> nodes;
};

// <data>/accel-studio/clusters (the folder beside RunDirectory::defaultRunsRoot()).
QString clusterRecordsDirectory();
// A record file; another schema, a newer version or no nodes is an InvalidInput error naming it.
Result<ClusterRecord> readClusterRecord(const QString &path);
// The newest `limit` readable records of `directory` (default: clusterRecordsDirectory()),
// newest first; unreadable files are skipped.
QList<ClusterRecord> recentClusterRecords(int limit, const QString &directory = {});

} // namespace accel::launcher
