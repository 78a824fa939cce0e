#include "app/studio/cluster/hostlist.h"

#include <QRegularExpression>
#include <QSettings>

namespace accel::app {

namespace {
const QString kSettingsKey = QStringLiteral("cluster/hosts");
} // namespace

Result<QStringList> parseHostList(const QString &text)
{
    static const QRegularExpression separators(QStringLiteral("[,\\s]+"));
    static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9._@:-]+$"));
    QStringList hosts;
    for (const QString &host : text.split(separators, Qt::SkipEmptyParts)) {
        if (!plain.match(host).hasMatch() || host.startsWith(QLatin1Char('-')))
            return makeError(ErrorCode::InvalidInput,
                             "host '" + host.toStdString() +
                                 "': expected a ~/.ssh/config alias or [user@]host[:port] (letters, digits and "
                                 ". _ - @ : only, not starting with -)",
                             "hosts");
        if (!hosts.contains(host))
            hosts << host;
    }
    if (hosts.isEmpty())
        return makeError(ErrorCode::InvalidInput,
                         "no hosts given: expected gpu1, gpu2, ... (~/.ssh/config aliases or [user@]host[:port])",
                         "hosts");
    return hosts;
}

QString hostListArgument(const QStringList &hosts)
{
    return hosts.join(QLatin1Char(','));
}

QStringList rememberedHosts()
{
    return QSettings().value(kSettingsKey).toStringList();
}

void rememberHosts(const QStringList &hosts)
{
    QSettings().setValue(kSettingsKey, hosts);
}

} // namespace accel::app
