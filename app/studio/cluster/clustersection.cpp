#include "app/studio/cluster/clustersection.h"

#include "app/studio/cluster/clustercards.h"
#include "app/studio/cluster/hostkeydialog.h"
#include "app/studio/cluster/hostlist.h"
#include "app/studio/cluster/slurmqueuepanel.h"
#include "launcher/accelcommand.h"

#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace accel::app {

namespace {

constexpr int kCommandLimitMs = 300000; // accel's own SSH steps time out long before
// An install sends libtorch (about 2 GB with CUDA) and unpacks it there.
constexpr int kInstallLimitMs = 60 * 60 * 1000;

// The widget a layout holds (the previous cards or verdicts), replaced by `next`.
void replaceContent(QVBoxLayout *area, QWidget *next)
{
    while (QLayoutItem *item = area->takeAt(0)) {
        delete item->widget();
        delete item;
    }
    area->addWidget(next);
}

// Why a command printed no report: its own words on stderr, or how it ended.
QString failureText(const launcher::AccelOutcome &outcome, const QString &program)
{
    if (outcome.failedToStart)
        return QObject::tr("cannot start %1: %2").arg(program, outcome.error);
    const QString err = QString::fromUtf8(outcome.standardError).trimmed();
    return err.isEmpty() ? outcome.describe() : err;
}

} // namespace

ClusterSection::ClusterSection(QWidget *parent) : QWidget(parent)
{
    setObjectName(QStringLiteral("clusterSection"));
    m_accel = launcher::AccelCommand::defaultProgram();
    m_host = std::make_unique<launcher::LocalHost>(m_accel);
    auto *layout = new QVBoxLayout(this);
    auto *intro = new QLabel(tr("The hosts of a multi-node cluster, reached over SSH with your ~/.ssh/config, keys "
                                "and known_hosts. Each check runs <tt>accel</tt> on the host, which must be the "
                                "same version as this studio's."),
                             this);
    intro->setWordWrap(true);
    layout->addWidget(intro);
    auto *bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Hosts:"), this));
    m_hostsEdit = new QLineEdit(this);
    m_hostsEdit->setObjectName(QStringLiteral("clusterHosts"));
    m_hostsEdit->setPlaceholderText(tr("gpu1, gpu2 (~/.ssh/config aliases or [user@]host[:port]; the first is "
                                       "machine 0)"));
    m_hostsEdit->setText(rememberedHosts().join(QStringLiteral(", ")));
    bar->addWidget(m_hostsEdit, 1);
    m_checkButton = new QPushButton(tr("Check hosts"), this);
    m_checkButton->setObjectName(QStringLiteral("checkHosts"));
    m_doctorButton = new QPushButton(tr("Network pre-flight"), this);
    m_doctorButton->setObjectName(QStringLiteral("networkPreflight"));
    m_doctorButton->setToolTip(tr("accel hosts doctor: accel on every host, the interface for the ranks, machine "
                                  "0 listening on the main port and every other host reaching it"));
    bar->addWidget(m_checkButton);
    bar->addWidget(m_doctorButton);
    layout->addLayout(bar);
    m_state = new QLabel(tr("Not checked yet."), this);
    m_state->setObjectName(QStringLiteral("clusterState"));
    m_state->setWordWrap(true);
    layout->addWidget(m_state);
    m_cards = new QWidget(this);
    auto *cardsArea = new QVBoxLayout(m_cards);
    cardsArea->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_cards);
    m_doctorArea = new QVBoxLayout;
    layout->addLayout(m_doctorArea);
    layout->addWidget(new SlurmQueuePanel(this));
    layout->addStretch(1);

    connect(m_checkButton, &QPushButton::clicked, this, &ClusterSection::checkHosts);
    connect(m_doctorButton, &QPushButton::clicked, this, &ClusterSection::runPreflight);
    connect(m_hostsEdit, &QLineEdit::textChanged, this, &ClusterSection::updateButtons);
    updateButtons();
}

// A command still running is cancelled with its process group by its destructor.
ClusterSection::~ClusterSection() = default;

void ClusterSection::setAccelProgram(const QString &program)
{
    m_accel = program;
    m_host = std::make_unique<launcher::LocalHost>(program);
}

void ClusterSection::setHosts(const QStringList &hosts)
{
    m_hostsEdit->setText(hosts.join(QStringLiteral(", ")));
}

QStringList ClusterSection::hosts() const
{
    auto hosts = parseHostList(m_hostsEdit->text());
    return hosts ? *hosts : QStringList();
}

bool ClusterSection::isBusy() const
{
    return m_command != nullptr;
}

const HostCheck *ClusterSection::hostCheck(const QString &host) const
{
    for (const HostCheck &check : m_checks) {
        if (check.host == host)
            return &check;
    }
    return nullptr;
}

bool ClusterSection::startCommand(const QStringList &arguments, Handler handler, int timeoutMs)
{
    if (isBusy()) {
        setState(tr("accel %1 is still running.").arg(m_command ? m_runningAction : QString()));
        return false;
    }
    launcher::HostCommandOptions options;
    options.timeoutMs = timeoutMs > 0 ? timeoutMs : kCommandLimitMs;
    m_command = m_host->start(arguments, options);
    connect(m_command.get(), &launcher::HostCommand::done, this, handler);
    m_runningAction = arguments.mid(0, 2).join(QLatin1Char(' '));
    setState(tr("Running accel %1...").arg(arguments.mid(0, 3).join(QLatin1Char(' '))));
    updateButtons();
    return true;
}

bool ClusterSection::startOnHosts(const QString &action, Handler handler)
{
    auto hosts = parseHostList(m_hostsEdit->text());
    if (!hosts) {
        setState(QString::fromStdString(hosts.error().toString()));
        return false;
    }
    rememberHosts(*hosts);
    return startCommand({QStringLiteral("hosts"), action, hostListArgument(*hosts), QStringLiteral("--json")}, handler);
}

bool ClusterSection::checkHosts()
{
    return startOnHosts(QStringLiteral("check"), &ClusterSection::onCheckDone);
}

bool ClusterSection::runPreflight()
{
    return startOnHosts(QStringLiteral("doctor"), &ClusterSection::onDoctorDone);
}

bool ClusterSection::installOn(const QString &host)
{
    return startCommand({QStringLiteral("hosts"), QStringLiteral("install"), host, QStringLiteral("--json")},
                        &ClusterSection::onInstallDone, kInstallLimitMs);
}

void ClusterSection::onInstallDone(const launcher::AccelOutcome &outcome)
{
    m_command.release()->deleteLater();
    auto report = parseHostsInstall(outcome.standardOutput);
    const bool ok = report && report->ok;
    if (!report) {
        setState(tr("The install failed: %1").arg(failureText(outcome, m_accel)));
    } else {
        QStringList lines;
        for (const HostInstallResult &host : report->hosts)
            lines << (host.status == QLatin1String("ok")
                          ? tr("%1: installed %2 into %3; the host is ok.")
                                .arg(host.host, report->packages.join(QStringLiteral(", ")), host.prefix)
                          : tr("%1: %2: %3").arg(host.host, host.status, host.message));
        setState(lines.join(QLatin1Char('\n')));
    }
    updateButtons();
    Q_EMIT installFinished(ok);
    // The cards show what the hosts say now (the message above stays until the check ends).
    if (report && !report->hosts.empty())
        checkHosts();
}

void ClusterSection::onCheckDone(const launcher::AccelOutcome &outcome)
{
    m_command.release()->deleteLater();
    auto report = parseHostsCheck(outcome.standardOutput);
    if (!report) {
        setState(tr("The check failed: %1").arg(failureText(outcome, m_accel)));
    } else {
        m_localVersion = report->accelVersion;
        m_checks = report->hosts;
        m_keyQuestions.clear();
        int ok = 0;
        for (const HostCheck &check : m_checks) {
            ok += check.ok() ? 1 : 0;
            if (check.hostKey)
                m_keyQuestions.push_back(check.host);
        }
        setState(tr("%1 of %2 host(s) ok (accel %3 here).")
                     .arg(ok)
                     .arg(static_cast<int>(m_checks.size()))
                     .arg(m_localVersion));
        rebuildCards();
    }
    updateButtons();
    Q_EMIT checkFinished();
    askNext();
}

void ClusterSection::onAcceptDone(const launcher::AccelOutcome &outcome)
{
    m_command.release()->deleteLater();
    auto report = parseHostsCheck(outcome.standardOutput);
    if (!report)
        setState(tr("The check failed: %1").arg(failureText(outcome, m_accel)));
    else
        mergeChecks(report->hosts);
    updateButtons();
    Q_EMIT checkFinished();
    askNext();
}

void ClusterSection::mergeChecks(const std::vector<HostCheck> &checks)
{
    for (const HostCheck &fresh : checks) {
        bool found = false;
        for (HostCheck &check : m_checks) {
            if (check.host == fresh.host) {
                check = fresh;
                found = true;
            }
        }
        if (!found)
            m_checks.push_back(fresh);
        setState(fresh.ok() ? tr("%1: host key recorded in known_hosts; the host is ok.").arg(fresh.host)
                            : tr("%1: %2").arg(fresh.host, fresh.message));
    }
    rebuildCards();
}

void ClusterSection::onDoctorDone(const launcher::AccelOutcome &outcome)
{
    m_command.release()->deleteLater();
    auto report = parseDoctor(outcome.standardOutput);
    if (!report) {
        setState(tr("The pre-flight failed: %1").arg(failureText(outcome, m_accel)));
    } else {
        int failed = 0;
        for (const DoctorCheck &check : report->checks)
            failed += check.status == QLatin1String("fail") ? 1 : 0;
        setState(report->ok ? tr("Network pre-flight: every check passed (main address %1:%2).")
                                  .arg(report->mainIp)
                                  .arg(report->mainPort)
                            : tr("Network pre-flight: %n check(s) failed; each says what to do.", nullptr, failed));
        auto *box = new QGroupBox(tr("Network pre-flight"), this);
        auto *boxLayout = new QVBoxLayout(box);
        boxLayout->addWidget(createDoctorTable(*report, box));
        replaceContent(m_doctorArea, box);
    }
    updateButtons();
    Q_EMIT preflightFinished();
}

void ClusterSection::rebuildCards()
{
    auto *content = new QWidget(m_cards);
    auto *grid = new QGridLayout(content);
    grid->setContentsMargins(0, 0, 0, 0);
    for (size_t i = 0; i < m_checks.size(); ++i) {
        QPushButton *review = nullptr;
        QPushButton *install = nullptr;
        QGroupBox *card = createHostCard(m_checks[i], m_localVersion, content, &review, &install);
        grid->addWidget(card, static_cast<int>(i / 2), static_cast<int>(i % 2));
        const QString host = m_checks[i].host;
        if (review)
            connect(review, &QPushButton::clicked, this, [this, host] { askAboutKey(host); });
        if (install) {
            install->setEnabled(!isBusy());
            connect(install, &QPushButton::clicked, this, [this, host] { installOn(host); });
        }
    }
    grid->setColumnStretch(0, 1);
    grid->setColumnStretch(1, 1);
    replaceContent(qobject_cast<QVBoxLayout *>(m_cards->layout()), content);
}

void ClusterSection::askNext()
{
    while (!m_dialog && !isBusy() && !m_keyQuestions.empty()) {
        const QString host = m_keyQuestions.front();
        m_keyQuestions.pop_front();
        askAboutKey(host);
    }
}

void ClusterSection::askAboutKey(const QString &host)
{
    const HostCheck *check = hostCheck(host);
    if (m_dialog || !check || !check->hostKey)
        return;
    const bool changed = check->status == QLatin1String("host_key_changed");
    if (!changed && check->status != QLatin1String("host_key_unknown"))
        return;
    m_dialog = new HostKeyDialog(host, *check->hostKey, changed, this);
    m_dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(m_dialog, &QDialog::finished, this, &ClusterSection::onDialogFinished);
    m_dialog->open(); // window-modal, never a nested event loop
}

void ClusterSection::onDialogFinished(int result)
{
    const QString host = m_dialog ? m_dialog->host() : QString();
    const bool accepted = result == QDialog::Accepted && m_dialog && !m_dialog->isChangedKey();
    m_dialog = nullptr; // deletes itself on close
    if (accepted) {
        startCommand({QStringLiteral("hosts"), QStringLiteral("check"), host, QStringLiteral("--json"),
                      QStringLiteral("--accept-new-host-key")},
                     &ClusterSection::onAcceptDone);
        return;
    }
    askNext();
}

void ClusterSection::setState(const QString &text)
{
    m_state->setText(text);
    Q_EMIT statusMessage(text);
}

void ClusterSection::updateButtons()
{
    const bool hostsValid = parseHostList(m_hostsEdit->text()).has_value();
    m_checkButton->setEnabled(hostsValid && !isBusy());
    m_doctorButton->setEnabled(hostsValid && !isBusy());
}

} // namespace accel::app
