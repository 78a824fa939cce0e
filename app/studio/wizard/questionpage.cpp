#include "app/studio/wizard/questionpage.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QVBoxLayout>

namespace accel::app {

QuestionPage::QuestionPage(const config::Section &section, const std::vector<const config::Question *> &questions,
                           QWidget *parent)
    : QWizardPage(parent), m_sectionId(section.id)
{
    setTitle(QString::fromStdString(section.title));
    setObjectName(QStringLiteral("page_") + QString::fromStdString(section.id));
    m_layout = new QVBoxLayout(this);
    for (const config::Question *question : questions) {
        Row row;
        row.question = question;
        row.box = new QWidget(this);
        auto *column = new QVBoxLayout(row.box);
        column->setContentsMargins(0, 2, 0, 2);
        row.prompt = new QLabel(row.box);
        row.prompt->setWordWrap(true);
        row.prompt->setToolTip(QString::fromStdString(question->help));
        column->addWidget(row.prompt);
        auto *line = new QHBoxLayout;
        const QString name = QStringLiteral("field_") + QString::fromStdString(question->id);
        if (question->kind == config::QuestionKind::Menu || question->kind == config::QuestionKind::YesNo) {
            row.choice = new QComboBox(row.box);
            row.choice->setObjectName(name);
            if (question->kind == config::QuestionKind::YesNo) {
                row.choice->addItem(tr("yes"), QStringLiteral("yes"));
                row.choice->addItem(tr("no"), QStringLiteral("no"));
            } else {
                for (const config::Choice &choice : question->choices)
                    row.choice->addItem(QString::fromStdString(choice.label), QString::fromStdString(choice.value));
            }
            const int index = row.choice->findData(QString::fromStdString(question->defaultAnswer));
            row.choice->setCurrentIndex(index < 0 ? 0 : index);
            connect(row.choice, &QComboBox::currentIndexChanged, this, &QuestionPage::inputChanged);
            line->addWidget(row.choice, 1);
        } else {
            row.text = new QLineEdit(row.box);
            row.text->setObjectName(name);
            row.text->setPlaceholderText(
                question->defaultAnswer.empty() ? tr("(empty)") : QString::fromStdString(question->defaultAnswer));
            connect(row.text, &QLineEdit::textChanged, this, &QuestionPage::inputChanged);
            line->addWidget(row.text, 1);
        }
        row.problem = new QLabel(row.box);
        row.problem->setObjectName(QStringLiteral("problem_") + QString::fromStdString(question->id));
        row.problem->setWordWrap(true);
        row.problem->setStyleSheet(QStringLiteral("color: #c62828;"));
        line->addWidget(row.problem, 1);
        column->addLayout(line);
        m_layout->addWidget(row.box);
        m_order.push_back(question->id);
        m_rows[question->id] = row;
    }
    m_layout->addStretch(1);
}

QString QuestionPage::input(const std::string &id) const
{
    auto it = m_rows.find(id);
    if (it == m_rows.end())
        return {};
    return it->second.choice ? it->second.choice->currentData().toString() : it->second.text->text();
}

bool QuestionPage::setAnswer(const std::string &id, const std::string &answer)
{
    auto it = m_rows.find(id);
    if (it == m_rows.end())
        return false;
    if (it->second.choice) {
        const int index = it->second.choice->findData(QString::fromStdString(answer));
        if (index < 0)
            return false;
        it->second.choice->setCurrentIndex(index);
    } else {
        it->second.text->setText(QString::fromStdString(answer));
    }
    return true;
}

QWidget *QuestionPage::editor(const std::string &id) const
{
    auto it = m_rows.find(id);
    if (it == m_rows.end())
        return nullptr;
    return it->second.choice ? static_cast<QWidget *>(it->second.choice) : it->second.text;
}

bool QuestionPage::applies(const WizardEvaluation &evaluation) const
{
    for (const std::string &id : m_order)
        if (evaluation.applicable.count(id))
            return true;
    return false;
}

void QuestionPage::apply(const WizardEvaluation &evaluation)
{
    bool complete = true;
    for (const std::string &id : m_order) {
        Row &row = m_rows[id];
        const bool shown = evaluation.applicable.count(id) != 0;
        row.box->setVisible(shown);
        if (!shown)
            continue;
        auto prompt = evaluation.prompts.find(id);
        const std::string hint = row.question->defaultHint();
        row.prompt->setText(
            QString::fromStdString(prompt != evaluation.prompts.end() ? prompt->second : row.question->prompt) +
            (hint.empty() ? QString() : QLatin1Char(' ') + QString::fromStdString(hint)));
        auto problem = evaluation.problems.find(id);
        row.problem->setText(problem == evaluation.problems.end() ? QString()
                                                                  : QString::fromStdString(problem->second));
        row.problem->setVisible(problem != evaluation.problems.end());
        if (problem != evaluation.problems.end())
            complete = false;
    }
    if (complete != m_complete) {
        m_complete = complete;
        Q_EMIT completeChanged();
    }
}

void QuestionPage::addFooter(QWidget *widget)
{
    m_layout->insertWidget(m_layout->count() - 1, widget);
}

void QuestionPage::initializePage()
{
    Q_EMIT inputChanged(); // prompts and rows depend on the pages before this one
}

bool QuestionPage::isComplete() const
{
    return m_complete;
}

} // namespace accel::app
