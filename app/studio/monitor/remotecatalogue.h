// RemoteCatalogue: the runs of SSH hosts, listed with `accel runs --json [--runs_root DIR]` run
// there through a launcher Host (RemoteHosts), on demand and on a timer. Every host is listed on
// its own and in the background: a host that does not answer is reported (failed()) when its
// command gives up, and never holds back the others or the GUI.
#pragma once

#include "monitor/runsmodel.h"

#include <QObject>
#include <QTimer>

#include <map>
#include <memory>
#include <vector>

namespace accel::launcher {
class HostCommand;
struct AccelOutcome;
} // namespace accel::launcher

namespace accel::app {

class RemoteHosts;

struct CatalogueSource {
    QString destination;
    QString runsRoot; // empty: the host's default runs root
    bool operator==(const CatalogueSource &other) const
    {
        return destination == other.destination && runsRoot == other.runsRoot;
    }
};

class RemoteCatalogue : public QObject {
    Q_OBJECT
public:
    // `hosts` must outlive the catalogue.
    explicit RemoteCatalogue(RemoteHosts *hosts, QObject *parent = nullptr);
    ~RemoteCatalogue() override;

    // What to list; a host may have several runs roots (e.g. the folders of recorded launches).
    void setSources(const QList<CatalogueSource> &sources);
    void addSource(const CatalogueSource &source); // no-op when already there
    QList<CatalogueSource> sources() const { return m_sources; }
    QStringList destinations() const;

    void setRefreshInterval(int milliseconds); // default 10000; 0: only refresh() lists
    void setCommandTimeout(int milliseconds) { m_commandTimeoutMs = milliseconds; }
    // Lists every host that is not being listed right now.
    void refresh();
    bool isListing(const QString &destination) const { return m_pending.count(destination) > 0; }
    // The last failure of that host ("gpu1: unreachable: ..."), empty once it answered.
    QString problem(const QString &destination) const { return m_problems.value(destination); }

Q_SIGNALS:
    void listed(const QString &destination, const QList<accel::monitor::RunInfo> &runs);
    // `reason`: an AccelOutcome reason ("unreachable", "host_key_unknown", ...) or "failed".
    void failed(const QString &destination, const QString &reason, const QString &message);

private:
    struct Pending;
    void list(const QString &destination);
    void onDone(const QString &destination, launcher::HostCommand *command, const launcher::AccelOutcome &outcome);

    RemoteHosts *m_hosts = nullptr;
    QList<CatalogueSource> m_sources;
    std::map<QString, std::unique_ptr<Pending>> m_pending;
    QHash<QString, QString> m_problems;
    QTimer m_timer;
    int m_commandTimeoutMs = 30000;
};

} // namespace accel::app
