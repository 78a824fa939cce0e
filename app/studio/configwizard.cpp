#include "app/studio/configwizard.h"

#include "core/config/configio.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace accel::app {

namespace {
QString qs(const std::string &text)
{
    return QString::fromStdString(text);
}
} // namespace

ConfigWizard::ConfigWizard(QWidget *parent) : QDialog(parent), m_flow(config::QuestionFlow::standard())
{
    setWindowTitle(tr("New config from questions"));
    resize(620, 420);
    auto *layout = new QVBoxLayout(this);
    m_progress = new QLabel(this);
    m_progress->setObjectName(QStringLiteral("wizardProgress"));
    layout->addWidget(m_progress);
    m_prompt = new QLabel(this);
    m_prompt->setObjectName(QStringLiteral("wizardPrompt"));
    m_prompt->setWordWrap(true);
    QFont promptFont = m_prompt->font();
    promptFont.setBold(true);
    m_prompt->setFont(promptFont);
    layout->addWidget(m_prompt);
    m_choice = new QComboBox(this);
    m_choice->setObjectName(QStringLiteral("wizardChoice"));
    layout->addWidget(m_choice);
    m_text = new QLineEdit(this);
    m_text->setObjectName(QStringLiteral("wizardText"));
    layout->addWidget(m_text);
    m_help = new QLabel(this);
    m_help->setWordWrap(true);
    m_help->setStyleSheet(QStringLiteral("color: palette(mid);"));
    layout->addWidget(m_help);
    m_error = new QLabel(this);
    m_error->setObjectName(QStringLiteral("wizardError"));
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("color: #c62828;"));
    layout->addWidget(m_error);
    m_summary = new QPlainTextEdit(this);
    m_summary->setReadOnly(true);
    m_summary->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    layout->addWidget(m_summary, 1);
    layout->addStretch(0);

    auto *buttons = new QDialogButtonBox(this);
    m_backButton = buttons->addButton(tr("Back"), QDialogButtonBox::ActionRole);
    m_nextButton = buttons->addButton(tr("Next"), QDialogButtonBox::ActionRole);
    m_finishButton = buttons->addButton(tr("Open in Configure"), QDialogButtonBox::AcceptRole);
    buttons->addButton(QDialogButtonBox::Cancel);
    m_nextButton->setDefault(true);
    connect(m_backButton, &QPushButton::clicked, this, &ConfigWizard::back);
    connect(m_nextButton, &QPushButton::clicked, this, &ConfigWizard::answerFromWidget);
    connect(m_text, &QLineEdit::returnPressed, this, &ConfigWizard::answerFromWidget);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    showCurrent();
}

bool ConfigWizard::answer(const QString &input)
{
    if (!m_current)
        return false;
    Result<std::string> interpreted = m_flow.interpret(*m_current, input.toStdString(), m_answers);
    if (!interpreted) {
        m_error->setText(qs(interpreted.error().toString()));
        return false;
    }
    m_answers[m_current->id] = *interpreted;
    m_answeredOrder.push_back(m_current->id);
    showCurrent();
    return true;
}

bool ConfigWizard::answerFromWidget()
{
    if (!m_current)
        return false;
    if (m_current->kind == config::QuestionKind::Menu || m_current->kind == config::QuestionKind::YesNo)
        return answer(m_choice->currentData().toString());
    return answer(m_text->text());
}

void ConfigWizard::back()
{
    if (m_answeredOrder.empty())
        return;
    m_answers.erase(m_answeredOrder.back());
    m_answeredOrder.pop_back();
    m_answers = m_flow.prune(m_answers);
    showCurrent();
}

Result<config::ClusterConfig> ConfigWizard::result() const
{
    return m_flow.build(m_answers);
}

QString ConfigWizard::errorText() const
{
    return m_error->text();
}

void ConfigWizard::showCurrent()
{
    m_error->clear();
    m_current = m_flow.next(m_answers);
    m_backButton->setEnabled(!m_answeredOrder.empty());
    const bool complete = m_current == nullptr;
    m_nextButton->setVisible(!complete);
    m_finishButton->setVisible(complete);
    m_summary->setVisible(complete);
    m_progress->setText(tr("%n question(s) answered", nullptr, static_cast<int>(m_answeredOrder.size())));
    if (complete) {
        m_choice->hide();
        m_text->hide();
        m_help->clear();
        auto built = result();
        if (built) {
            m_prompt->setText(tr("Done. This is the config your answers produce:"));
            m_summary->setPlainText(qs(config::serializeConfig(*built, config::ConfigFormat::Yaml)));
            m_finishButton->setEnabled(true);
        } else {
            m_prompt->setText(tr("Accelerate would refuse these answers:"));
            m_error->setText(qs(built.error().toString()));
            m_summary->clear();
            m_finishButton->setEnabled(false);
        }
        return;
    }
    const config::Question &question = *m_current;
    m_prompt->setText(qs(question.promptFor(m_answers)) + QLatin1Char(' ') + qs(question.defaultHint()));
    m_help->setText(qs(question.help));
    const bool menu = question.kind == config::QuestionKind::Menu || question.kind == config::QuestionKind::YesNo;
    m_choice->setVisible(menu);
    m_text->setVisible(!menu);
    if (menu) {
        m_choice->clear();
        if (question.kind == config::QuestionKind::YesNo) {
            m_choice->addItem(tr("yes"), QStringLiteral("yes"));
            m_choice->addItem(tr("no"), QStringLiteral("no"));
        } else {
            for (const config::Choice &choice : question.choices)
                m_choice->addItem(qs(choice.label), qs(choice.value));
        }
        const int index = m_choice->findData(qs(question.defaultAnswer));
        m_choice->setCurrentIndex(index < 0 ? 0 : index);
        m_choice->setFocus();
    } else {
        m_text->clear();
        m_text->setPlaceholderText(question.defaultAnswer.empty() ? tr("(empty)") : qs(question.defaultAnswer));
        m_text->setFocus();
    }
}

} // namespace accel::app
