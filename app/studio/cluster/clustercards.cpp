#include "app/studio/cluster/clustercards.h"

#include "app/studio/hardwarecards.h"

#include <QFormLayout>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QMap>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace accel::app {

namespace {

QLabel *label(const QString &text, const QString &objectName, QWidget *parent)
{
    auto *widget = new QLabel(text, parent);
    widget->setObjectName(objectName);
    widget->setWordWrap(true);
    widget->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return widget;
}

// "0", or "8 (NVIDIA A100 x8)".
QString gpuText(const hardware::GpuSection &gpu)
{
    QMap<QString, int> models;
    for (const auto &device : gpu.gpus)
        ++models[QString::fromStdString(device.name)];
    QStringList names;
    for (auto it = models.cbegin(); it != models.cend(); ++it)
        names << (it.value() > 1 ? QStringLiteral("%1 x%2").arg(it.key()).arg(it.value()) : it.key());
    QString text = QString::number(gpu.gpus.size());
    if (!names.isEmpty())
        text += QStringLiteral(" (%1)").arg(names.join(QStringLiteral(", ")));
    return text;
}

QString statusText(const QString &status)
{
    if (status == QLatin1String("ok"))
        return QObject::tr("✔ ok");
    return QStringLiteral("✘ ") + status;
}

} // namespace

QGroupBox *createHostCard(const HostCheck &check, const QString &localVersion, QWidget *parent, QPushButton **reviewKey,
                          QPushButton **install)
{
    auto *box = new QGroupBox(check.host, parent);
    box->setObjectName(QStringLiteral("hostCard:") + check.host);
    auto *layout = new QVBoxLayout(box);
    auto *form = new QFormLayout;
    auto *status = label(statusText(check.status), QStringLiteral("hostStatus:") + check.host, box);
    status->setProperty("status", check.status);
    form->addRow(QObject::tr("Status:"), status);
    if (!check.accelVersion.isEmpty())
        form->addRow(QObject::tr("accel:"), label(check.accelVersion, QStringLiteral("hostAccel:") + check.host, box));
    if (check.report) {
        const hardware::HardwareReport &report = *check.report;
        form->addRow(QObject::tr("Machine:"), label(QString::fromStdString(report.system.hostname), {}, box));
        form->addRow(QObject::tr("CPUs:"),
                     label(QString::number(report.cpu.logicalCpus), QStringLiteral("hostCpus:") + check.host, box));
        form->addRow(QObject::tr("Memory:"),
                     label(formatBytes(report.memory.totalBytes), QStringLiteral("hostMemory:") + check.host, box));
        form->addRow(QObject::tr("GPUs:"), label(gpuText(report.gpu), QStringLiteral("hostGpus:") + check.host, box));
    }
    layout->addLayout(form);
    if (!check.ok()) {
        layout->addWidget(label(check.message, QStringLiteral("hostMessage:") + check.host, box));
        auto *fix = label(QObject::tr("<b>What to do:</b> %1").arg(whatToDo(check, localVersion).toHtmlEscaped()),
                          QStringLiteral("hostFix:") + check.host, box);
        fix->setTextFormat(Qt::RichText);
        layout->addWidget(fix);
    }
    QPushButton *review = nullptr;
    if (check.hostKey &&
        (check.status == QLatin1String("host_key_unknown") || check.status == QLatin1String("host_key_changed"))) {
        review = new QPushButton(QObject::tr("Review host key..."), box);
        review->setObjectName(QStringLiteral("reviewHostKey:") + check.host);
        layout->addWidget(review, 0, Qt::AlignLeft);
    }
    if (reviewKey)
        *reviewKey = review;
    QPushButton *installButton = nullptr;
    if (offersInstall(check)) {
        installButton = new QPushButton(QObject::tr("Install accel %1 here").arg(localVersion), box);
        installButton->setObjectName(QStringLiteral("installAccel:") + check.host);
        installButton->setToolTip(QObject::tr("accel hosts install %1: copies this version's packages there over "
                                              "SSH and installs them under ~/.local, without root")
                                      .arg(check.host));
        layout->addWidget(installButton, 0, Qt::AlignLeft);
    }
    if (install)
        *install = installButton;
    return box;
}

QTableWidget *createDoctorTable(const DoctorReport &report, QWidget *parent)
{
    auto *table = new QTableWidget(static_cast<int>(report.checks.size()), 4, parent);
    table->setObjectName(QStringLiteral("doctorChecks"));
    table->setHorizontalHeaderLabels(
        {QObject::tr("Check"), QObject::tr("Host"), QObject::tr("Verdict"), QObject::tr("Message / what to do")});
    table->verticalHeader()->setVisible(false);
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->setWordWrap(true);
    table->horizontalHeader()->setStretchLastSection(true);
    for (size_t i = 0; i < report.checks.size(); ++i) {
        const DoctorCheck &check = report.checks[i];
        const int row = static_cast<int>(i);
        table->setItem(row, 0, new QTableWidgetItem(check.check));
        table->setItem(row, 1, new QTableWidgetItem(check.host));
        table->setItem(row, 2, new QTableWidgetItem(check.status));
        QString text = check.message;
        if (!check.fix.isEmpty())
            text += QLatin1Char('\n') + QObject::tr("what to do: %1").arg(check.fix);
        table->setItem(row, 3, new QTableWidgetItem(text));
    }
    table->resizeColumnsToContents();
    table->resizeRowsToContents();
    return table;
}

} // namespace accel::app
