#include "tests/helpers/netnstestbed.h"

#include <QProcess>

#include <unistd.h>

namespace accel::test {

NetnsTestbed::NetnsTestbed(int nodes)
    : m_nodes(nodes), m_subnet(100 + static_cast<int>(::getpid() % 100)), m_tag(QString::number(::getpid() % 10000000))
{}

NetnsTestbed::~NetnsTestbed()
{
    remove();
}

QString NetnsTestbed::nodeNamespace(int node) const
{
    return QStringLiteral("accel%1-%2").arg(m_tag).arg(node);
}

QString NetnsTestbed::nodeAddress(int node) const
{
    return QStringLiteral("10.213.%1.%2").arg(m_subnet).arg(10 + node);
}

QString NetnsTestbed::bridgeAddress() const
{
    return QStringLiteral("10.213.%1.1").arg(m_subnet);
}

QString NetnsTestbed::ip(const QStringList &arguments)
{
    QProcess process;
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start(QStringLiteral("ip"), arguments);
    if (!process.waitForFinished(10000) || process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0)
        return QStringLiteral("ip %1: %2")
            .arg(arguments.join(QLatin1Char(' ')), process.error() == QProcess::FailedToStart
                                                       ? QStringLiteral("ip(8) is not installed (Debian: iproute2)")
                                                       : QString::fromLocal8Bit(process.readAll()).trimmed());
    return {};
}

bool NetnsTestbed::subnetInUse(int subnet)
{
    QProcess process;
    process.start(QStringLiteral("ip"),
                  {"-o", "-4", "addr", "show", "to", QStringLiteral("10.213.%1.0/24").arg(subnet)});
    return !process.waitForFinished(10000) || !process.readAllStandardOutput().trimmed().isEmpty();
}

QString NetnsTestbed::start()
{
    if (::geteuid() != 0)
        return QStringLiteral("network namespaces need root");
    const QString bridge = QStringLiteral("acbr%1").arg(m_tag);
    // A /24 no interface here uses yet (tests running side by side each take their own).
    for (int tries = 0; tries < 100 && subnetInUse(m_subnet); ++tries)
        m_subnet = 100 + (m_subnet - 100 + 1) % 150;
    const QString subnet = QStringLiteral("10.213.%1.").arg(m_subnet);
    if (QString error = ip({"link", "add", bridge, "type", "bridge"}); !error.isEmpty())
        return error;
    m_bridge = true;
    for (const QStringList &step :
         {QStringList{"addr", "add", subnet + "1/24", "dev", bridge}, QStringList{"link", "set", bridge, "up"}}) {
        if (QString error = ip(step); !error.isEmpty())
            return error;
    }
    for (int node = 0; node < m_nodes; ++node) {
        const QString ns = nodeNamespace(node);
        if (QString error = ip({"netns", "add", ns}); !error.isEmpty())
            return error;
        m_created << ns;
        const QString outside = QStringLiteral("acvh%1-%2").arg(m_tag).arg(node);
        const QString inside = QStringLiteral("eth0");
        const QList<QStringList> steps = {
            {"link", "add", outside, "type", "veth", "peer", "name", inside, "netns", ns},
            {"link", "set", outside, "master", bridge},
            {"link", "set", outside, "up"},
            {"-n", ns, "addr", "add", nodeAddress(node) + "/24", "dev", inside},
            {"-n", ns, "link", "set", inside, "up"},
            {"-n", ns, "link", "set", "lo", "up"},
        };
        for (const QStringList &step : steps) {
            if (QString error = ip(step); !error.isEmpty())
                return error;
        }
    }
    return {};
}

void NetnsTestbed::remove()
{
    for (const QString &ns : m_created)
        ip({"netns", "delete", ns}); // takes its end of the veth pair, and so the pair, with it
    m_created.clear();
    if (m_bridge)
        ip({"link", "delete", QStringLiteral("acbr%1").arg(m_tag)});
    m_bridge = false;
}

} // namespace accel::test
