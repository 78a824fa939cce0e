#include "app/studio/cluster/clusterform.h"

#include "core/common/distributeddefaults.h"

#include <QColor>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

namespace accel::app {

ClusterForm::ClusterForm(const config::ClusterConfig &base, QWidget *parent)
    : QDialog(parent), m_base(base), m_local(config::localMachine())
{
    setWindowTitle(tr("Generate every node's config"));
    setObjectName(QStringLiteral("clusterForm"));
    resize(640, 560);
    auto *layout = new QVBoxLayout(this);
    auto *intro = new QLabel(tr("One config per node (node-<rank>.yaml); the rank is the host's row. Distributed type "
                                "%1, mixed precision and the other settings come from the config you started from.")
                                 .arg(QString::fromStdString(config::toString(base.distributedType))),
                             this);
    intro->setWordWrap(true);
    layout->addWidget(intro);

    m_hosts = new QTableWidget(0, 2, this);
    m_hosts->setObjectName(QStringLiteral("clusterHosts"));
    m_hosts->setHorizontalHeaderLabels({tr("Host (name or address)"), tr("Devices (if known)")});
    m_hosts->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    layout->addWidget(m_hosts, 1);
    auto *hostButtons = new QHBoxLayout;
    auto *add = new QPushButton(tr("Add host"), this);
    add->setObjectName(QStringLiteral("clusterAddHost"));
    auto *remove = new QPushButton(tr("Remove"), this);
    hostButtons->addWidget(add);
    hostButtons->addWidget(remove);
    hostButtons->addStretch(1);
    layout->addLayout(hostButtons);
    connect(add, &QPushButton::clicked, this, [this] { addHostRow(QString()); });
    connect(remove, &QPushButton::clicked, this, &ClusterForm::removeSelectedHosts);
    connect(m_hosts, &QTableWidget::itemChanged, this, &ClusterForm::hostsEdited);

    auto *form = new QFormLayout;
    m_processes = new QSpinBox(this);
    m_processes->setObjectName(QStringLiteral("clusterProcesses"));
    m_processes->setRange(0, 1024);
    m_processes->setValue(1);
    form->addRow(tr("Processes per host:"), m_processes);
    m_mainHost = new QComboBox(this);
    m_mainHost->setObjectName(QStringLiteral("clusterMainHost"));
    form->addRow(tr("Main host (rank 0 runs here):"), m_mainHost);
    m_port = new QSpinBox(this);
    m_port->setObjectName(QStringLiteral("clusterPort"));
    m_port->setRange(0, 99999);
    m_port->setValue(kDefaultMainProcessPort);
    form->addRow(tr("Port:"), m_port);
    auto *folderRow = new QHBoxLayout;
    m_folder = new QLineEdit(this);
    m_folder->setObjectName(QStringLiteral("clusterFolder"));
    auto *browse = new QPushButton(tr("Browse..."), this);
    folderRow->addWidget(m_folder, 1);
    folderRow->addWidget(browse);
    form->addRow(tr("Write into folder:"), folderRow);
    layout->addLayout(form);
    connect(m_processes, &QSpinBox::valueChanged, this, &ClusterForm::relint);
    connect(m_port, &QSpinBox::valueChanged, this, &ClusterForm::relint);
    connect(m_mainHost, &QComboBox::currentIndexChanged, this, &ClusterForm::relint);
    connect(m_folder, &QLineEdit::textChanged, this, &ClusterForm::relint);
    connect(browse, &QPushButton::clicked, this, &ClusterForm::chooseFolder);

    m_summary = new QLabel(this);
    m_summary->setObjectName(QStringLiteral("clusterSummary"));
    m_summary->setWordWrap(true);
    layout->addWidget(m_summary);
    m_messages = new QListWidget(this);
    m_messages->setObjectName(QStringLiteral("clusterMessages"));
    m_messages->setMaximumHeight(130);
    layout->addWidget(m_messages);

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    m_write = buttons->addButton(tr("Write"), QDialogButtonBox::ActionRole);
    m_write->setObjectName(QStringLiteral("clusterWrite"));
    connect(m_write, &QPushButton::clicked, this, [this] { write(); });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    relint();
}

void ClusterForm::setLocalMachine(config::LocalMachine local)
{
    m_local = std::move(local);
    relint();
}

void ClusterForm::setHosts(const QStringList &hosts)
{
    m_updating = true;
    m_hosts->setRowCount(0);
    for (const QString &host : hosts)
        addHostRow(host);
    m_updating = false;
    hostsEdited();
}

void ClusterForm::setProcessesPerHost(int processes)
{
    m_processes->setValue(processes);
}

void ClusterForm::setPort(int port)
{
    m_port->setValue(port);
}

void ClusterForm::setOutputFolder(const QString &folder)
{
    m_folder->setText(folder);
}

void ClusterForm::addHostRow(const QString &name)
{
    const bool wasUpdating = m_updating;
    m_updating = true;
    const int row = m_hosts->rowCount();
    m_hosts->insertRow(row);
    m_hosts->setItem(row, 0, new QTableWidgetItem(name));
    m_hosts->setItem(row, 1, new QTableWidgetItem(QString()));
    m_updating = wasUpdating;
    if (!m_updating)
        hostsEdited();
}

void ClusterForm::removeSelectedHosts()
{
    const int row = m_hosts->currentRow();
    if (row >= 0)
        m_hosts->removeRow(row);
    hostsEdited();
}

void ClusterForm::hostsEdited()
{
    if (m_updating)
        return;
    // The main host combo lists the hosts; keep the choice when it is still there.
    const QString chosen = m_mainHost->currentText();
    m_updating = true;
    m_mainHost->clear();
    for (int row = 0; row < m_hosts->rowCount(); ++row) {
        const QString name = m_hosts->item(row, 0) ? m_hosts->item(row, 0)->text().trimmed() : QString();
        if (!name.isEmpty() && m_mainHost->findText(name) < 0)
            m_mainHost->addItem(name);
    }
    const int index = m_mainHost->findText(chosen);
    m_mainHost->setCurrentIndex(index >= 0 ? index : 0);
    m_updating = false;
    relint();
}

config::ClusterPlanInput ClusterForm::input() const
{
    config::ClusterPlanInput in;
    for (int row = 0; row < m_hosts->rowCount(); ++row) {
        config::ClusterHost host;
        host.name = m_hosts->item(row, 0) ? m_hosts->item(row, 0)->text().trimmed().toStdString() : std::string();
        bool ok = false;
        const int devices = m_hosts->item(row, 1) ? m_hosts->item(row, 1)->text().trimmed().toInt(&ok) : 0;
        if (ok)
            host.devices = devices;
        in.hosts.push_back(host);
    }
    in.processesPerHost = m_processes->value();
    in.mainHost = m_mainHost->currentText().toStdString();
    in.port = m_port->value();
    in.base = m_base;
    return in;
}

void ClusterForm::relint()
{
    if (m_updating)
        return;
    m_plan = config::planCluster(input(), m_local);
    m_messages->clear();
    for (const config::Diagnostic &d : m_plan.messages) {
        auto *item = new QListWidgetItem(QString::fromStdString(d.toString()), m_messages);
        item->setForeground(d.severity == config::Severity::Error ? QColor(0xc6, 0x28, 0x28)
                                                                  : QColor(0x9a, 0x67, 0x00));
    }
    if (m_plan.ok())
        m_summary->setText(tr("%n node(s), %1 processes in all; every node dials %2:%3.", nullptr,
                              static_cast<int>(m_plan.nodes.size()))
                               .arg(m_plan.nodes.empty() ? 0 : *m_plan.nodes.front().numProcesses)
                               .arg(QString::fromStdString(m_plan.mainAddress))
                               .arg(m_port->value()));
    else
        m_summary->setText(tr("Fix the errors below; nothing is written until they are gone."));
    m_write->setEnabled(m_plan.ok() && !m_folder->text().trimmed().isEmpty());
}

QStringList ClusterForm::messages() const
{
    QStringList list;
    for (int i = 0; i < m_messages->count(); ++i)
        list << m_messages->item(i)->text();
    return list;
}

Result<std::vector<std::string>> ClusterForm::write()
{
    relint();
    const QString folder = m_folder->text().trimmed();
    if (folder.isEmpty())
        return makeError(ErrorCode::InvalidInput, "choose a folder to write into");
    auto result = config::writeClusterPlan(m_plan, folder.toStdString());
    if (!result) {
        m_summary->setText(tr("Nothing written: %1").arg(QString::fromStdString(result.error().toString())));
        return result;
    }
    QStringList paths;
    for (const std::string &path : *result)
        paths << QString::fromStdString(path);
    m_summary->setText(tr("Wrote %1").arg(paths.join(QStringLiteral(", "))));
    Q_EMIT written(paths);
    return result;
}

void ClusterForm::chooseFolder()
{
    const QString folder = QFileDialog::getExistingDirectory(this, tr("Folder for the node configs"), m_folder->text());
    if (!folder.isEmpty())
        m_folder->setText(folder);
}

} // namespace accel::app
