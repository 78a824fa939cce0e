#include "app/studio/monitor/stackdialog.h"

#include "launcher/hostcommand.h"

#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QVBoxLayout>

namespace accel::app {

StackDialog::StackDialog(launcher::HostCommand *command, const QString &runId, QWidget *parent) : QDialog(parent)
{
    setWindowTitle(tr("Stacks of %1").arg(runId));
    setAttribute(Qt::WA_DeleteOnClose);
    m_status = new QLabel(tr("Capturing every rank's stack…"), this);
    m_text = new QPlainTextEdit(this);
    m_text->setReadOnly(true);
    m_text->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_status);
    layout->addWidget(m_text, 1);
    layout->addWidget(buttons);
    resize(900, 520);
    command->setParent(this); // closing the window cancels a capture still under way
    connect(command, &launcher::HostCommand::done, this, &StackDialog::onDone);
}

QString StackDialog::reportText() const
{
    return m_text->toPlainText();
}

void StackDialog::onDone(const launcher::AccelOutcome &outcome)
{
    const QString output = QString::fromLocal8Bit(outcome.standardOutput).trimmed();
    const QString errors = QString::fromLocal8Bit(outcome.standardError).trimmed();
    if (outcome.failedToStart || outcome.timedOut) {
        m_status->setText(tr("accel stack did not run: %1").arg(outcome.error));
    } else if (outcome.exitCode != 0) {
        m_status->setText(tr("accel stack failed (exit code %1)").arg(outcome.exitCode));
    } else {
        m_status->setText(tr("Ranks with identical stacks share a line; each group's frames follow, innermost "
                             "first. Kept in the run directory as stacks.txt and stacks.json."));
    }
    m_text->setPlainText(errors.isEmpty() ? output : output + QStringLiteral("\n\n") + errors);
}

} // namespace accel::app
