#include "app/studio/wizard/summarypage.h"

#include "app/studio/configwizard.h"
#include "core/config/configio.h"

#include <QFileDialog>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace accel::app {

SummaryPage::SummaryPage(ConfigWizard *wizard) : QWizardPage(wizard), m_wizard(wizard)
{
    setTitle(tr("Summary"));
    setSubTitle(tr("The config file your answers produce, exactly as `accel config` would write it."));
    setObjectName(QStringLiteral("page_summary"));
    auto *layout = new QVBoxLayout(this);
    m_preview = new QPlainTextEdit(this);
    m_preview->setObjectName(QStringLiteral("wizardPreview"));
    m_preview->setReadOnly(true);
    m_preview->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    layout->addWidget(m_preview, 1);
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("wizardStatus"));
    m_status->setWordWrap(true);
    layout->addWidget(m_status);
    m_saveButton = new QPushButton(tr("Save to..."), this);
    m_saveButton->setObjectName(QStringLiteral("wizardSave"));
    connect(m_saveButton, &QPushButton::clicked, this, &SummaryPage::saveWithDialog);
    layout->addWidget(m_saveButton, 0, Qt::AlignLeft);
}

QString SummaryPage::previewText() const
{
    return m_preview->toPlainText();
}

QString SummaryPage::statusText() const
{
    return m_status->text();
}

void SummaryPage::setStatus(const QString &text, bool problem)
{
    m_status->setText(text);
    m_status->setStyleSheet(problem ? QStringLiteral("color: #c62828;") : QString());
}

void SummaryPage::initializePage()
{
    auto built = m_wizard->result();
    m_valid = built.has_value();
    m_saveButton->setEnabled(m_valid);
    if (built) {
        m_preview->setPlainText(QString::fromStdString(config::serializeConfig(*built, config::ConfigFormat::Yaml)));
        setStatus(QString(), false);
    } else {
        m_preview->clear();
        setStatus(tr("Accelerate would refuse these answers: %1").arg(QString::fromStdString(built.error().toString())),
                  true);
    }
    Q_EMIT completeChanged();
}

bool SummaryPage::isComplete() const
{
    return m_valid;
}

void SummaryPage::saveWithDialog()
{
    const QString path = QFileDialog::getSaveFileName(this, tr("Save config"), QStringLiteral("default_config.yaml"),
                                                      tr("Accelerate configs (*.yaml *.yml *.json)"));
    if (!path.isEmpty())
        m_wizard->saveTo(path);
}

} // namespace accel::app
