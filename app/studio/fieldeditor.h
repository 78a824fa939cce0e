// One row of the Configure form: the editor for one Accelerate config key (a combo box, check
// box, spin box or line edit) plus the validation messages shown right beside it. Values travel
// as optional text ("not set" = std::nullopt) so the binding to the typed config stays in one place.
#pragma once

#include <QString>
#include <QStringList>
#include <QWidget>

#include <optional>

class QComboBox;
class QCheckBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace accel::app {

struct FieldSpec {
    enum class Kind { Choice, Bool, Int, Text };
    QString key;   // the config key, e.g. "fsdp_config.fsdp_sharding_strategy"
    QString label; // shown in the form
    Kind kind = Kind::Text;
    QStringList choices;  // Choice: allowed values
    bool optional = true; // may be "not set"
    int minimum = 0;      // Int
    int maximum = 1 << 20;
    QString toolTip;
};

enum class DiagnosticLevel { Info, Warning, Error };

class FieldEditor : public QWidget {
    Q_OBJECT
public:
    explicit FieldEditor(FieldSpec spec, QWidget *parent = nullptr);

    const FieldSpec &spec() const { return m_spec; }
    QString key() const { return m_spec.key; }

    // Shows `value` without emitting edited(). An unknown choice is added so the file's value is
    // never silently replaced.
    void setValue(const std::optional<QString> &value);
    std::optional<QString> value() const;

    void clearDiagnostics();
    void addDiagnostic(DiagnosticLevel level, const QString &message);
    // The text of the messages shown beside the field ("" when none).
    QString diagnosticText() const;
    QLabel *diagnosticLabel() const { return m_diagnostic; }
    QWidget *editorWidget() const { return m_editor; }

Q_SIGNALS:
    void edited();

private:
    void updateDiagnosticLabel();

    FieldSpec m_spec;
    QWidget *m_editor = nullptr;
    QComboBox *m_combo = nullptr;
    QCheckBox *m_check = nullptr;
    QSpinBox *m_spin = nullptr;
    QLineEdit *m_line = nullptr;
    QLabel *m_diagnostic = nullptr;
    QStringList m_messages;
    DiagnosticLevel m_worstLevel = DiagnosticLevel::Info;
    bool m_updating = false;
};

} // namespace accel::app
