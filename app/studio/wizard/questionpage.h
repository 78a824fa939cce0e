// One page of the config wizard: the questions of one section of the question flow
// (core/config/questionflow.h), each as a prompt, an input widget (a combo box for menus and
// yes/no, a line edit otherwise, its placeholder the default) and a validation message beside it.
// Rows whose question does not apply to the answers so far are hidden; Next stays disabled while
// a shown row has a problem.
#pragma once

#include "core/config/questionflow.h"

#include <QWizardPage>

#include <map>
#include <set>
#include <string>
#include <vector>

class QComboBox;
class QLabel;
class QLineEdit;
class QVBoxLayout;

namespace accel::app {

// What the wizard's widgets amount to right now, walked in flow order like the terminal would.
struct WizardEvaluation {
    config::Answers answers;                     // applicable questions only, canonical
    std::set<std::string> applicable;            // question ids
    std::map<std::string, std::string> prompts;  // id -> prompt for the answers before it
    std::map<std::string, std::string> problems; // id -> why its input does not fit
};

class QuestionPage : public QWizardPage {
    Q_OBJECT
public:
    QuestionPage(const config::Section &section, const std::vector<const config::Question *> &questions,
                 QWidget *parent = nullptr);

    const std::string &sectionId() const { return m_sectionId; }
    bool hasQuestion(const std::string &id) const { return m_rows.count(id) != 0; }
    // The typed input the widget holds ("" = the default), as the terminal would read it.
    QString input(const std::string &id) const;
    // Sets the widget to a canonical answer (a menu's value, "yes"/"no", a number, a text).
    bool setAnswer(const std::string &id, const std::string &answer);
    // The input widget of a question (objectName "field_<id>"), nullptr when not on this page.
    QWidget *editor(const std::string &id) const;
    // Shows, hides and annotates the rows for `evaluation`.
    void apply(const WizardEvaluation &evaluation);
    // True when at least one of this page's questions applies.
    bool applies(const WizardEvaluation &evaluation) const;
    // Extra widgets below the questions (the multi-node page's cluster button).
    void addFooter(QWidget *widget);

    void initializePage() override;
    bool isComplete() const override;

Q_SIGNALS:
    void inputChanged();

private:
    struct Row {
        const config::Question *question = nullptr;
        QWidget *box = nullptr;
        QLabel *prompt = nullptr;
        QComboBox *choice = nullptr;
        QLineEdit *text = nullptr;
        QLabel *problem = nullptr;
    };

    std::string m_sectionId;
    std::map<std::string, Row> m_rows;
    std::vector<std::string> m_order;
    QVBoxLayout *m_layout = nullptr;
    bool m_complete = true;
};

} // namespace accel::app
