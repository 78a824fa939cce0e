#include "app/studio/launch/interpreterfield.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QShowEvent>
#include <QToolButton>
#include <QVBoxLayout>

namespace accel::app {

InterpreterField::InterpreterField(QWidget *parent) : QWidget(parent)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    auto *row = new QHBoxLayout;
    m_edit = new QLineEdit(this);
    m_edit->setObjectName(QStringLiteral("interpreter"));
    m_edit->setPlaceholderText(tr("python3, or a venv's bin/python (choose from the list)"));
    m_choose = new QToolButton(this);
    m_choose->setObjectName(QStringLiteral("interpreterChoices"));
    m_choose->setText(tr("Find…"));
    m_choose->setToolTip(tr("Interpreters found for this script: its project's .venv, your virtualenvs and conda "
                            "environments, python3 on PATH"));
    m_choose->setPopupMode(QToolButton::InstantPopup);
    m_menu = new QMenu(m_choose);
    m_choose->setMenu(m_menu);
    row->addWidget(m_edit, 1);
    row->addWidget(m_choose);
    layout->addLayout(row);
    m_line = new QLabel(this);
    m_line->setObjectName(QStringLiteral("interpreterCheck"));
    m_line->setWordWrap(true);
    m_line->setTextFormat(Qt::RichText);
    m_line->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::LinksAccessibleByMouse);
    layout->addWidget(m_line);

    m_pause.setSingleShot(true);
    m_pause.setInterval(400);
    connect(&m_pause, &QTimer::timeout, this, [this] { m_probe.start(interpreter(), m_script); });
    connect(&m_probe, &InterpreterProbe::finished, this, &InterpreterField::onChecked);
    connect(&m_finderProbe, &InterpreterProbe::finished, this, [this](const InterpreterReport &report) {
        if (report.ran)
            m_found << report;
        probeNextCandidate();
    });
    connect(m_edit, &QLineEdit::textChanged, this, [this] {
        scheduleCheck();
        Q_EMIT changed();
    });
    connect(m_menu, &QMenu::aboutToShow, this, [this] {
        if (!m_finding && m_found.isEmpty())
            findInterpreters();
        fillMenu();
    });
    connect(m_line, &QLabel::linkActivated, this, [this](const QString &python) { setInterpreter(python); });
    scheduleCheck();
}

void InterpreterField::setInterpreter(const QString &python)
{
    m_edit->setText(python);
}

QString InterpreterField::interpreter() const
{
    return m_edit->text().trimmed();
}

void InterpreterField::setScriptPath(const QString &path)
{
    if (path == m_script)
        return;
    m_script = path;
    m_found.clear(); // the project's environments depend on the script's folder
    scheduleCheck();
}

void InterpreterField::scheduleCheck()
{
    m_probe.cancel();
    m_check = {};
    m_line->setText(tr("Checking the interpreter…"));
    m_checkWhenShown = !isVisible(); // a hidden row (another kind of program) runs nothing
    if (m_checkWhenShown)
        m_pause.stop();
    else
        m_pause.start();
}

void InterpreterField::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    if (m_checkWhenShown)
        scheduleCheck();
}

void InterpreterField::onChecked(const InterpreterReport &report)
{
    m_check = report;
    updateCheckLine();
    // An interpreter without the training stack: look for one that has it, to offer it.
    if (!report.hasTrainingStack() && !m_finding && m_found.isEmpty())
        findInterpreters();
    Q_EMIT checked(report);
}

QString InterpreterField::checkText() const
{
    return m_line->text();
}

void InterpreterField::updateCheckLine()
{
    if (!m_check.ran && m_check.error.isEmpty())
        return; // not checked yet
    QString text = m_check.ran ? m_check.summary().toHtmlEscaped() : m_check.problem().toHtmlEscaped();
    if (m_check.ran && !m_check.missing.isEmpty())
        text += QStringLiteral("<br><b>%1</b>").arg(m_check.problem().toHtmlEscaped());
    if (!m_check.hasTrainingStack()) {
        for (const InterpreterReport &other : m_found) {
            if (other.hasTrainingStack() && other.python != interpreter()) {
                text += QStringLiteral("<br>") + tr("Found with torch and accelerate: %1 (%2) — <a href=\"%3\">use "
                                                    "it</a>")
                                                     .arg(other.python.toHtmlEscaped(), other.summary().toHtmlEscaped(),
                                                          other.python.toHtmlEscaped());
                break;
            }
        }
    }
    m_line->setText(text);
}

void InterpreterField::findInterpreters()
{
    m_finderProbe.cancel();
    m_found.clear();
    m_candidates = pythonCandidates(m_script);
    m_finding = true;
    probeNextCandidate();
}

void InterpreterField::probeNextCandidate()
{
    if (m_candidates.isEmpty()) {
        m_finding = false;
        fillMenu();
        updateCheckLine();
        Q_EMIT found();
        return;
    }
    m_finderProbe.start(m_candidates.takeFirst());
}

void InterpreterField::fillMenu()
{
    m_menu->clear();
    // Those with torch and accelerate first, in the order they were found.
    QList<InterpreterReport> ordered;
    for (const bool stack : {true, false})
        for (const InterpreterReport &report : std::as_const(m_found))
            if (report.hasTrainingStack() == stack)
                ordered << report;
    for (const InterpreterReport &report : std::as_const(ordered)) {
        QAction *action = m_menu->addAction(QStringLiteral("%1 — %2").arg(report.python, report.summary()), this,
                                            [this, python = report.python] { setInterpreter(python); });
        action->setData(report.python);
    }
    if (m_finding)
        m_menu->addAction(tr("Looking for interpreters…"))->setEnabled(false);
    else if (m_found.isEmpty())
        m_menu->addAction(tr("No Python interpreter found"))->setEnabled(false);
    m_menu->addSeparator();
    m_menu->addAction(tr("Browse…"), this, [this] {
        const QString path =
            QFileDialog::getOpenFileName(this, tr("Python interpreter"), QFileInfo(interpreter()).absolutePath());
        if (!path.isEmpty())
            setInterpreter(path);
    });
}

} // namespace accel::app
