#include "app/studio/launch/launchtarget.h"

#include "app/studio/cluster/hostlist.h"
#include "launcher/export/shellquote.h"

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QShowEvent>

namespace accel::app {

LaunchTarget::LaunchTarget(QWidget *parent) : QWidget(parent)
{
    auto *form = new QFormLayout(this);
    form->setContentsMargins(0, 0, 0, 0);
    m_target = new QComboBox(this);
    m_target->setObjectName(QStringLiteral("runOn"));
    m_target->addItems({tr("This machine"), tr("Cluster hosts (over SSH)")});
    form->addRow(tr("Run on:"), m_target);
    m_hosts = new QLineEdit(this);
    m_hosts->setObjectName(QStringLiteral("launchHosts"));
    m_hosts->setPlaceholderText(tr("gpu1, gpu2 (machine 0 first; check them on the Hardware page's Cluster tab)"));
    m_remembered = rememberedHosts().join(QStringLiteral(", "));
    m_hosts->setText(m_remembered);
    form->addRow(tr("Hosts:"), m_hosts);
    m_environment = new QLineEdit(this);
    m_environment->setObjectName(QStringLiteral("hostEnvironment"));
    m_environment->setPlaceholderText(tr("KEY=VALUE ... for accel on every host, e.g. GLOO_SOCKET_IFNAME=eth0"));
    form->addRow(tr("Environment there:"), m_environment);
    auto *note = new QLabel(tr("On hosts, the config, script and job files are read at the same paths on every "
                               "host (a shared file system, or copies)."),
                            this);
    note->setWordWrap(true);
    form->addRow(QString(), note);

    auto update = [this] {
        m_hosts->setEnabled(runsOnHosts());
        m_environment->setEnabled(runsOnHosts());
        Q_EMIT changed();
    };
    connect(m_target, &QComboBox::currentIndexChanged, this, update);
    for (QLineEdit *edit : {m_hosts, m_environment})
        connect(edit, &QLineEdit::textChanged, this, &LaunchTarget::changed);
    m_hosts->setEnabled(false);
    m_environment->setEnabled(false);
}

void LaunchTarget::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    const QString remembered = rememberedHosts().join(QStringLiteral(", "));
    if (m_hosts->text() == m_remembered && remembered != m_remembered) {
        m_remembered = remembered;
        m_hosts->setText(remembered);
    }
}

void LaunchTarget::setRunOnHosts(bool onHosts)
{
    m_target->setCurrentIndex(onHosts ? 1 : 0);
}

bool LaunchTarget::runsOnHosts() const
{
    return m_target->currentIndex() == 1;
}

void LaunchTarget::setHosts(const QStringList &hosts)
{
    m_hosts->setText(hosts.join(QStringLiteral(", ")));
    setRunOnHosts(true);
}

Result<QStringList> LaunchTarget::hosts() const
{
    return parseHostList(m_hosts->text());
}

void LaunchTarget::setHostEnvironment(const QString &text)
{
    m_environment->setText(text);
}

Result<QStringList> LaunchTarget::hostArguments(const config::ClusterConfig &config, const QString &interpreter) const
{
    auto names = hosts();
    if (!names)
        return tl::unexpected(names.error());
    QStringList args = {QStringLiteral("--hosts"), hostListArgument(*names), QStringLiteral("--json")};
    if (config.mainProcessIp && !config.mainProcessIp->empty())
        args << QStringLiteral("--main_process_ip") << QString::fromStdString(*config.mainProcessIp);
    if (config.mainProcessPort)
        args << QStringLiteral("--main_process_port") << QString::number(*config.mainProcessPort);
    if (!interpreter.isEmpty())
        args << QStringLiteral("--remote_env") << QStringLiteral("PYTHON_EXEC=") + interpreter;
    auto words = launcher::exporting::shellSplit(m_environment->text().toStdString());
    if (!words)
        return makeError(ErrorCode::InvalidInput, words.error().message, "environment on the hosts");
    static const QRegularExpression assignment(QStringLiteral("^[A-Za-z_][A-Za-z0-9_]*="));
    for (const std::string &word : *words) {
        const QString entry = QString::fromStdString(word);
        if (!assignment.match(entry).hasMatch())
            return makeError(ErrorCode::InvalidInput,
                             "expected KEY=VALUE (KEY of letters, digits and _), got '" + word + "'",
                             "environment on the hosts");
        args << QStringLiteral("--remote_env") << entry;
    }
    return args;
}

} // namespace accel::app
