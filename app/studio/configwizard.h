// "New from questions": `accelerate config`'s questionnaire as a dialog, one question at a time,
// driven by the same declarative flow as `accel config` (core/config/questionflow.h). Finishing
// builds the ClusterConfig that the Configure page then shows as an unsaved document.
#pragma once

#include "core/common/result.h"
#include "core/config/clusterconfig.h"
#include "core/config/questionflow.h"

#include <QDialog>

#include <string>
#include <vector>

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;

namespace accel::app {

class ConfigWizard : public QDialog {
    Q_OBJECT
public:
    explicit ConfigWizard(QWidget *parent = nullptr);

    // The question on screen; nullptr once every applicable question is answered.
    const config::Question *currentQuestion() const { return m_current; }
    // Answers the current question with typed input (as the terminal would take it: "" for the
    // default, a menu's number, value or label). Shows why and returns false when it does not fit.
    bool answer(const QString &input);
    // Answers with what the input widget holds (the Next button).
    bool answerFromWidget();
    void back();

    const config::Answers &answers() const { return m_answers; }
    // The config the answers build (only meaningful once currentQuestion() is nullptr).
    Result<config::ClusterConfig> result() const;
    QString errorText() const;

private:
    void showCurrent();

    const config::QuestionFlow &m_flow;
    config::Answers m_answers;
    std::vector<std::string> m_answeredOrder;
    const config::Question *m_current = nullptr;
    QLabel *m_progress = nullptr;
    QLabel *m_prompt = nullptr;
    QLabel *m_help = nullptr;
    QLabel *m_error = nullptr;
    QComboBox *m_choice = nullptr;
    QLineEdit *m_text = nullptr;
    QPlainTextEdit *m_summary = nullptr;
    QPushButton *m_backButton = nullptr;
    QPushButton *m_nextButton = nullptr;
    QPushButton *m_finishButton = nullptr;
};

} // namespace accel::app
