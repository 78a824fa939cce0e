#include "launcher/machinerendezvous.h"

#include <QHostAddress>
#include <QHostInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkProxy>
#include <QTcpServer>
#include <QTcpSocket>

#include <algorithm>
#include <optional>
#include <unistd.h>

namespace accel::launcher {

namespace {

// Every message is one JSON object on one line; a join is small, so a longer line is not one.
constexpr int kMaxLine = 64 * 1024;
constexpr int kRetryMs = 250;
const char *const kProtocol = "accel.rendezvous";

QString thisHostName()
{
    char buffer[256] = {};
    ::gethostname(buffer, sizeof(buffer) - 1);
    return QString::fromLocal8Bit(buffer);
}

QString seconds(double value)
{
    return QString::number(value) + QStringLiteral(" s");
}

void sendLine(QTcpSocket *socket, const QJsonObject &object)
{
    socket->write(QJsonDocument(object).toJson(QJsonDocument::Compact) + '\n');
    socket->flush();
}

// The next complete line of `buffer`, removed from it; empty when none is complete yet.
std::optional<QByteArray> takeLine(QByteArray &buffer)
{
    const int newline = buffer.indexOf('\n');
    if (newline < 0)
        return std::nullopt;
    QByteArray line = buffer.left(newline);
    buffer.remove(0, newline + 1);
    return line;
}

} // namespace

MachineRendezvous::MachineRendezvous(RendezvousOptions options, int numMachines, int localWorldSize, QString runId,
                                     QObject *parent)
    : QObject(parent), m_options(std::move(options)), m_numMachines(numMachines), m_localWorldSize(localWorldSize),
      m_runId(std::move(runId))
{
    m_timer.setSingleShot(true);
}

MachineRendezvous::~MachineRendezvous()
{
    closeAll();
}

QString MachineRendezvous::endpoint() const
{
    return QString::fromStdString(m_options.host) + QLatin1Char(':') + QString::number(m_options.port);
}

bool MachineRendezvous::resolve(QString &error)
{
    if (m_address)
        return true;
    const QString host = QString::fromStdString(m_options.host);
    if (QHostAddress address; address.setAddress(host)) {
        m_address = std::make_unique<QHostAddress>(address);
        return true;
    }
    const QHostInfo info = QHostInfo::fromName(host);
    for (const QHostAddress &address : info.addresses()) {
        if (address.protocol() == QAbstractSocket::IPv4Protocol) {
            m_address = std::make_unique<QHostAddress>(address);
            return true;
        }
    }
    if (!info.addresses().isEmpty()) {
        m_address = std::make_unique<QHostAddress>(info.addresses().first());
        return true;
    }
    error = QStringLiteral("rendezvous endpoint %1: cannot resolve %2 (%3)").arg(endpoint(), host, info.errorString());
    return false;
}

void MachineRendezvous::start(int round)
{
    closeAll();
    m_round = round;
    m_running = true;
    m_members.clear();
    m_hostRefusal.clear();
    m_lastConnectError.clear();
    m_clock.start();
    QString error;
    if (!resolve(error)) {
        QTimer::singleShot(0, this, [this, error] {
            RendezvousOutcome outcome;
            outcome.error = error;
            end(outcome);
        });
        return;
    }
    if (m_options.isHost != 0) {
        m_server = std::make_unique<QTcpServer>();
        m_server->setProxy(QNetworkProxy::NoProxy); // see connectToHost
        if (m_server->listen(*m_address, quint16(m_options.port))) {
            host();
            return;
        }
        m_hostRefusal = m_server->errorString();
        m_server.reset();
        if (m_options.isHost == 1) {
            const QString message = QStringLiteral("rdzv_conf is_host=true but this machine cannot listen on %1: %2")
                                        .arg(endpoint(), m_hostRefusal);
            QTimer::singleShot(0, this, [this, message] {
                RendezvousOutcome outcome;
                outcome.error = message;
                end(outcome);
            });
            return;
        }
    }
    // Until the host answers, for read_timeout (a dropped SYN reports no error of its own).
    connect(&m_timer, &QTimer::timeout, this, &MachineRendezvous::onClientTimeout);
    m_timer.start(int(m_options.readTimeoutS * 1000));
    connectToHost();
}

void MachineRendezvous::cancel()
{
    m_running = false;
    closeAll();
}

void MachineRendezvous::closeAll()
{
    m_timer.stop();
    m_timer.disconnect(this);
    for (Member &member : m_members) {
        if (member.socket) {
            member.socket->disconnect(this);
            member.socket->disconnectFromHost();
            member.socket->deleteLater();
        }
    }
    m_members.clear();
    if (m_server) {
        m_server->close();
        m_server.reset();
    }
    if (m_client) {
        m_client->disconnect(this);
        m_client->abort();
        m_client->deleteLater();
        m_client = nullptr;
    }
    m_clientBuffer.clear();
    m_connected = false;
}

void MachineRendezvous::end(RendezvousOutcome outcome)
{
    if (!m_running)
        return;
    m_running = false;
    outcome.round = m_round;
    closeAll();
    Q_EMIT finished(outcome);
}

// ---- the host ----

void MachineRendezvous::host()
{
    m_members.push_back(
        {nullptr, thisHostName() + QStringLiteral(" (") + m_address->toString() + QLatin1Char(')'), {}, true});
    connect(m_server.get(), &QTcpServer::newConnection, this, &MachineRendezvous::onNewConnection);
    connect(&m_timer, &QTimer::timeout, this, &MachineRendezvous::hostTimedOut);
    m_timer.start(int(m_options.joinTimeoutS * 1000));
    if (m_numMachines <= 1)
        QTimer::singleShot(0, this, &MachineRendezvous::complete);
}

void MachineRendezvous::onNewConnection()
{
    while (QTcpSocket *socket = m_server ? m_server->nextPendingConnection() : nullptr) {
        socket->setParent(nullptr);
        m_members.push_back({socket, socket->peerAddress().toString(), {}, false});
        connect(socket, &QTcpSocket::readyRead, this, [this, socket] { onMemberData(socket); });
        connect(socket, &QTcpSocket::disconnected, this, [this, socket] { onMemberGone(socket); });
    }
}

void MachineRendezvous::onMemberData(QTcpSocket *socket)
{
    auto member =
        std::find_if(m_members.begin(), m_members.end(), [socket](const Member &m) { return m.socket == socket; });
    if (member == m_members.end())
        return;
    member->buffer += socket->readAll();
    const auto line = takeLine(member->buffer);
    if (!line) {
        if (member->buffer.size() > kMaxLine)
            onMemberGone(socket);
        return;
    }
    const QJsonObject join = QJsonDocument::fromJson(*line).object();
    auto refuse = [&](const QString &why) {
        sendLine(socket, {{QStringLiteral("error"), why}});
        socket->disconnect(this);
        socket->disconnectFromHost();
        socket->deleteLater();
        m_members.erase(member);
    };
    if (join.value(QStringLiteral("protocol")).toString() != QLatin1String(kProtocol))
        return refuse(QStringLiteral("not an accel launch rendezvous message"));
    const QString name = join.value(QStringLiteral("name")).toString() + QStringLiteral(" (") +
                         socket->peerAddress().toString() + QLatin1Char(')');
    if (join.value(QStringLiteral("run_id")).toString() != m_runId)
        return refuse(QStringLiteral("rendezvous id %1 differs from the host's %2")
                          .arg(join.value(QStringLiteral("run_id")).toString(), m_runId));
    if (join.value(QStringLiteral("round")).toInt(-1) != m_round)
        return refuse(QStringLiteral("%1 is at attempt %2, the host at attempt %3 (restarts must stay in step)")
                          .arg(name)
                          .arg(join.value(QStringLiteral("round")).toInt(-1))
                          .arg(m_round));
    if (join.value(QStringLiteral("num_machines")).toInt() != m_numMachines ||
        join.value(QStringLiteral("local_world_size")).toInt() != m_localWorldSize)
        return refuse(QStringLiteral("%1 runs num_machines %2 with %3 rank(s) each; the host %4 with %5: start every "
                                     "machine with the same command")
                          .arg(name)
                          .arg(join.value(QStringLiteral("num_machines")).toInt())
                          .arg(join.value(QStringLiteral("local_world_size")).toInt())
                          .arg(m_numMachines)
                          .arg(m_localWorldSize));
    member->name = name;
    member->joined = true;
    const auto joined = std::count_if(m_members.begin(), m_members.end(), [](const Member &m) { return m.joined; });
    if (joined >= m_numMachines)
        complete();
}

void MachineRendezvous::onMemberGone(QTcpSocket *socket)
{
    auto member =
        std::find_if(m_members.begin(), m_members.end(), [socket](const Member &m) { return m.socket == socket; });
    if (member == m_members.end())
        return;
    socket->disconnect(this);
    socket->deleteLater();
    m_members.erase(member); // a machine that left before the meeting filled does not count
}

void MachineRendezvous::complete()
{
    // Rank 0 hosts the job's store on the endpoint's port once the meeting has closed it (as
    // torchrun's workers use the rendezvous store): the machines need no port beyond that one.
    const int port = m_options.port;
    RendezvousOutcome outcome;
    QJsonArray machines;
    for (const Member &member : m_members)
        if (member.joined) {
            machines.append(member.name);
            outcome.machines << member.name;
        }
    int rank = 0;
    for (const Member &member : m_members) {
        if (!member.joined)
            continue;
        if (member.socket)
            sendLine(member.socket, {{QStringLiteral("rank"), rank},
                                     {QStringLiteral("master_addr"), m_address->toString()},
                                     {QStringLiteral("master_port"), port},
                                     {QStringLiteral("machines"), machines}});
        ++rank;
    }
    outcome.ok = true;
    outcome.hosted = true;
    outcome.machineRank = 0;
    outcome.masterAddress = m_address->toString();
    outcome.masterPort = port;
    end(outcome); // closes the meeting's listener before the ranks start; the answers are sent
}

QString MachineRendezvous::joinedList() const
{
    QStringList names;
    int rank = 0;
    for (const Member &member : m_members)
        if (member.joined)
            names << QStringLiteral("%1 as machine %2").arg(member.name).arg(rank++);
    return names.join(QStringLiteral(", "));
}

void MachineRendezvous::hostTimedOut()
{
    const int joined = int(std::count_if(m_members.begin(), m_members.end(), [](const Member &m) { return m.joined; }));
    const int missing = m_numMachines - joined;
    RendezvousOutcome outcome;
    outcome.error = QStringLiteral("c10d rendezvous at %1 (attempt %2) timed out after join_timeout %3: %4 of "
                                   "num_machines %5 joined (%6); %7 never came%8")
                        .arg(endpoint())
                        .arg(m_round)
                        .arg(seconds(m_options.joinTimeoutS))
                        .arg(joined)
                        .arg(m_numMachines)
                        .arg(joinedList())
                        .arg(missing == 1 ? QStringLiteral("machine %1").arg(joined)
                                          : QStringLiteral("machines %1-%2").arg(joined).arg(m_numMachines - 1))
                        .arg(missing == 1 ? QString() : QStringLiteral(" (%1 machines)").arg(missing));
    for (const Member &member : m_members)
        if (member.socket)
            sendLine(member.socket, {{QStringLiteral("error"), outcome.error}});
    end(outcome);
}

// ---- the other machines ----

void MachineRendezvous::connectToHost()
{
    if (m_client) {
        m_client->disconnect(this);
        m_client->abort();
        m_client->deleteLater();
    }
    m_client = new QTcpSocket(this);
    // Straight to the host, never through a proxy of this machine's system settings (Qt asks
    // libproxy for one on a thread of its own otherwise): the machines of a cluster talk directly.
    m_client->setProxy(QNetworkProxy::NoProxy);
    m_connected = false;
    connect(m_client, &QTcpSocket::connected, this, [this] {
        m_connected = true;
        sendLine(m_client, {{QStringLiteral("protocol"), QLatin1String(kProtocol)},
                            {QStringLiteral("name"), thisHostName()},
                            {QStringLiteral("run_id"), m_runId},
                            {QStringLiteral("round"), m_round},
                            {QStringLiteral("num_machines"), m_numMachines},
                            {QStringLiteral("local_world_size"), m_localWorldSize}});
        // The host ends the meeting within its join_timeout; a little more for its answer to arrive.
        m_timer.disconnect(this);
        connect(&m_timer, &QTimer::timeout, this, &MachineRendezvous::onClientTimeout);
        m_timer.start(int(m_options.joinTimeoutS * 1000) + 5000);
    });
    connect(m_client, &QTcpSocket::readyRead, this, &MachineRendezvous::onClientData);
    connect(m_client, &QTcpSocket::errorOccurred, this, [this] {
        if (!m_running)
            return;
        m_lastConnectError = m_client->errorString();
        if (m_connected) {
            RendezvousOutcome outcome;
            outcome.error = QStringLiteral("the rendezvous host at %1 closed the connection before it gave out "
                                           "machine ranks (%2)")
                                .arg(endpoint(), m_lastConnectError);
            end(outcome);
            return;
        }
        if (m_clock.elapsed() >= qint64(m_options.readTimeoutS * 1000)) {
            onClientTimeout();
            return;
        }
        QTimer::singleShot(kRetryMs, this, [this] {
            if (m_running && !m_connected)
                connectToHost();
        });
    });
    m_client->connectToHost(*m_address, quint16(m_options.port));
}

void MachineRendezvous::onClientData()
{
    m_clientBuffer += m_client->readAll();
    const auto line = takeLine(m_clientBuffer);
    if (!line)
        return;
    const QJsonObject reply = QJsonDocument::fromJson(*line).object();
    RendezvousOutcome outcome;
    if (reply.contains(QStringLiteral("error"))) {
        outcome.error = QStringLiteral("rendezvous host at %1: %2")
                            .arg(endpoint(), reply.value(QStringLiteral("error")).toString());
        end(outcome);
        return;
    }
    outcome.machineRank = reply.value(QStringLiteral("rank")).toInt(-1);
    outcome.masterAddress = reply.value(QStringLiteral("master_addr")).toString();
    outcome.masterPort = reply.value(QStringLiteral("master_port")).toInt();
    for (const QJsonValue &name : reply.value(QStringLiteral("machines")).toArray())
        outcome.machines << name.toString();
    outcome.ok = outcome.machineRank > 0 && outcome.machineRank < m_numMachines && outcome.masterPort > 0 &&
                 !outcome.masterAddress.isEmpty();
    if (!outcome.ok)
        outcome.error = QStringLiteral("rendezvous host at %1 answered something that is not a machine rank: %2")
                            .arg(endpoint(), QString::fromUtf8(line->left(200)));
    end(outcome);
}

void MachineRendezvous::onClientTimeout()
{
    RendezvousOutcome outcome;
    if (m_connected)
        outcome.error = QStringLiteral("the rendezvous host at %1 gave out no machine ranks within join_timeout %2")
                            .arg(endpoint(), seconds(m_options.joinTimeoutS));
    else
        outcome.error =
            QStringLiteral("no machine hosts the c10d rendezvous at %1: none answered within read_timeout %2 (%3). "
                           "The machine whose address is %4 hosts it (rdzv_conf is_host=true makes one host)%5")
                .arg(endpoint(), seconds(m_options.readTimeoutS),
                     m_lastConnectError.isEmpty() ? QStringLiteral("no answer") : m_lastConnectError,
                     QString::fromStdString(m_options.host),
                     m_hostRefusal.isEmpty()
                         ? QString()
                         : QStringLiteral("; this machine could not listen there: ") + m_hostRefusal);
    end(outcome);
}

} // namespace accel::launcher
