// MachineRendezvous: the c10d rendezvous of `accel launch --rdzv_backend c10d` on several machines
// started with the same command and no machine rank. The machine whose address is the endpoint (it
// can bind it, or rdzv_conf is_host says so) hosts the meeting: the others connect, say who they
// are, and once num_machines have joined the host hands out machine ranks in order of arrival (its
// own is 0); rank 0 then hosts the job's TCPStore on the endpoint (the meeting's listener is closed
// by then), so the machines need one port, as with a static launch. It runs again before every
// restart (--max_restarts). A meeting that does not fill within join_timeout ends with an error
// that names the machines that came and says how many did not. One round at a time; Qt Core and
// Qt Network only, no libtorch (docs/launch.md "Rendezvous").
#pragma once

#include "launcher/launchsettings.h"

#include <QElapsedTimer>
#include <QObject>
#include <QStringList>
#include <QTimer>

#include <memory>
#include <vector>

class QHostAddress;
class QTcpServer;
class QTcpSocket;

namespace accel::launcher {

struct RendezvousOutcome {
    bool ok = false;
    QString error;       // when !ok: what happened, with the machines known
    int round = 0;       // the attempt (restart count) this rendezvous was for
    int machineRank = 0; // this machine's
    QString masterAddress;
    int masterPort = 0;
    QStringList machines; // "name (address)" by machine rank
    bool hosted = false;  // this machine hosted the meeting
};

class MachineRendezvous : public QObject {
    Q_OBJECT
public:
    MachineRendezvous(RendezvousOptions options, int numMachines, int localWorldSize, QString runId,
                      QObject *parent = nullptr);
    ~MachineRendezvous() override;

    // Meets the other machines for attempt `round`; finished() reports the end once.
    void start(int round);
    // Stops a meeting in progress without reporting (the run is being stopped).
    void cancel();

    QString endpoint() const; // "host:port"

Q_SIGNALS:
    void finished(const accel::launcher::RendezvousOutcome &outcome);

private:
    struct Member {
        QTcpSocket *socket = nullptr; // null for the host itself
        QString name;
        QByteArray buffer;
        bool joined = false;
    };

    bool resolve(QString &error);
    void host();
    void onNewConnection();
    void onMemberData(QTcpSocket *socket);
    void onMemberGone(QTcpSocket *socket);
    void complete();
    void hostTimedOut();
    void connectToHost();
    void onClientData();
    void onClientTimeout();
    void end(RendezvousOutcome outcome);
    QString joinedList() const;
    void closeAll();

    RendezvousOptions m_options;
    int m_numMachines;
    int m_localWorldSize;
    QString m_runId;
    std::unique_ptr<QHostAddress> m_address; // the endpoint, resolved once
    int m_round = 0;
    bool m_running = false;
    QString m_hostRefusal; // why this machine does not host (its bind error)

    std::unique_ptr<QTcpServer> m_server;
    std::vector<Member> m_members; // host: machine 0 first, then in order of arrival
    QTimer m_timer;                // host: join_timeout; client: reconnect and overall deadline
    QElapsedTimer m_clock;
    QTcpSocket *m_client = nullptr;
    QByteArray m_clientBuffer;
    QString m_lastConnectError;
    bool m_connected = false;
};

} // namespace accel::launcher
