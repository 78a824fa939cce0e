#include "app/studio/configcheckspanel.h"

#include <QFontDatabase>
#include <QIcon>
#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QVBoxLayout>

namespace accel::app {

namespace {
QIcon severityIcon(config::Severity severity)
{
    return QIcon(severity == config::Severity::Error ? QStringLiteral(":/icons/status-error.svg")
                                                     : QStringLiteral(":/icons/status-warning.svg"));
}
} // namespace

ConfigChecksPanel::ConfigChecksPanel(QWidget *parent) : QWidget(parent)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_summary = new QLabel(this);
    m_summary->setObjectName(QStringLiteral("validationSummary"));
    m_summary->setWordWrap(true);
    layout->addWidget(m_summary);
    m_processes = new QLabel(this);
    m_processes->setObjectName(QStringLiteral("processCount"));
    m_processes->setWordWrap(true);
    m_processes->setToolTip(tr("What `accel launch --config_file` starts with this config (the launcher's own count)"));
    layout->addWidget(m_processes);
    m_messages = new QListWidget(this);
    m_messages->setObjectName(QStringLiteral("messages"));
    m_messages->setWordWrap(true);
    m_messages->setMaximumHeight(110);
    m_messages->setToolTip(tr("Double-click a message to go to its field"));
    connect(m_messages, &QListWidget::itemActivated, this,
            [this](QListWidgetItem *item) { Q_EMIT fieldRequested(item->data(Qt::UserRole).toString()); });
    layout->addWidget(m_messages);
    layout->addWidget(new QLabel(tr("File text (what Save writes):"), this));
    m_preview = new QPlainTextEdit(this);
    m_preview->setObjectName(QStringLiteral("preview"));
    m_preview->setReadOnly(true);
    m_preview->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_preview->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    layout->addWidget(m_preview, 1);
}

void ConfigChecksPanel::showText(const QString &text)
{
    if (m_preview->toPlainText() != text)
        m_preview->setPlainText(text);
}

void ConfigChecksPanel::showChecks(const config::Diagnostics &diagnostics, const QString &processes, bool accepted)
{
    m_messages->clear();
    m_messages->setVisible(!diagnostics.empty());
    int errors = 0;
    for (const config::Diagnostic &diagnostic : diagnostics) {
        errors += diagnostic.severity == config::Severity::Error ? 1 : 0;
        auto *item = new QListWidgetItem(severityIcon(diagnostic.severity),
                                         QString::fromStdString(diagnostic.toString()), m_messages);
        item->setData(Qt::UserRole, QString::fromStdString(diagnostic.key));
    }
    const int warnings = static_cast<int>(diagnostics.size()) - errors;
    if (diagnostics.empty())
        m_summary->setText(tr("✔ No problems found: `accel launch` would accept this config."));
    else
        m_summary->setText(tr("%n error(s)", nullptr, errors) + QStringLiteral(", ") +
                           tr("%n warning(s)", nullptr, warnings) + tr(" (also shown beside the fields)"));
    m_processes->setText(accepted ? tr("Launch starts %1.").arg(processes) : processes);
}

} // namespace accel::app
