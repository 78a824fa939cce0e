// The config wizard's last page: the file the answers produce (YAML preview, or why Accelerate
// would refuse them), "Save to..." writing it atomically, and Finish opening it in Configure.
#pragma once

#include <QWizardPage>

class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace accel::app {

class ConfigWizard;

class SummaryPage : public QWizardPage {
    Q_OBJECT
public:
    explicit SummaryPage(ConfigWizard *wizard);

    QString previewText() const;
    QString statusText() const;
    void setStatus(const QString &text, bool problem);

    void initializePage() override;
    bool isComplete() const override;

private:
    void saveWithDialog();

    ConfigWizard *m_wizard = nullptr;
    QPlainTextEdit *m_preview = nullptr;
    QLabel *m_status = nullptr;
    QPushButton *m_saveButton = nullptr;
    bool m_valid = false;
};

} // namespace accel::app
