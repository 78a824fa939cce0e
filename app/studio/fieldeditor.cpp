#include "app/studio/fieldeditor.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QIcon>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

namespace accel::app {

namespace {
const QString notSetText = QStringLiteral("(not set)");
}

FieldEditor::FieldEditor(FieldSpec spec, QWidget *parent) : QWidget(parent), m_spec(std::move(spec))
{
    setObjectName(QStringLiteral("field:%1").arg(m_spec.key));
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    switch (m_spec.kind) {
    case FieldSpec::Kind::Choice:
    case FieldSpec::Kind::Bool: {
        // Optional booleans need a third "not set" state, so they use a combo box too.
        if (m_spec.kind == FieldSpec::Kind::Bool && !m_spec.optional) {
            m_check = new QCheckBox(this);
            m_editor = m_check;
            connect(m_check, &QCheckBox::toggled, this, [this] {
                if (!m_updating)
                    Q_EMIT edited();
            });
            break;
        }
        m_combo = new QComboBox(this);
        // Long choices (AOT_TORCHXLA_TRACE_ONCE) must not widen the whole form.
        m_combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        m_combo->setMinimumContentsLength(10);
        if (m_spec.optional)
            m_combo->addItem(notSetText);
        m_combo->addItems(m_spec.kind == FieldSpec::Kind::Bool
                              ? QStringList{QStringLiteral("true"), QStringLiteral("false")}
                              : m_spec.choices);
        m_editor = m_combo;
        connect(m_combo, &QComboBox::currentIndexChanged, this, [this] {
            if (!m_updating)
                Q_EMIT edited();
        });
        break;
    }
    case FieldSpec::Kind::Int:
        m_spin = new QSpinBox(this);
        m_spin->setRange(m_spec.optional ? m_spec.minimum - 1 : m_spec.minimum, m_spec.maximum);
        if (m_spec.optional)
            m_spin->setSpecialValueText(notSetText);
        m_editor = m_spin;
        connect(m_spin, &QSpinBox::valueChanged, this, [this] {
            if (!m_updating)
                Q_EMIT edited();
        });
        break;
    case FieldSpec::Kind::Text:
        m_line = new QLineEdit(this);
        if (m_spec.optional)
            m_line->setPlaceholderText(notSetText);
        m_editor = m_line;
        connect(m_line, &QLineEdit::textEdited, this, [this] {
            if (!m_updating)
                Q_EMIT edited();
        });
        break;
    }
    m_editor->setObjectName(QStringLiteral("editor:%1").arg(m_spec.key));
    m_editor->setToolTip(m_spec.toolTip.isEmpty() ? m_spec.key : m_spec.key + QStringLiteral("\n") + m_spec.toolTip);
    layout->addWidget(m_editor);

    m_diagnostic = new QLabel(this);
    m_diagnostic->setObjectName(QStringLiteral("diagnostic:%1").arg(m_spec.key));
    m_diagnostic->setWordWrap(true);
    m_diagnostic->setTextFormat(Qt::RichText);
    m_diagnostic->setVisible(false);
    layout->addWidget(m_diagnostic);
}

void FieldEditor::setValue(const std::optional<QString> &value)
{
    m_updating = true;
    if (m_combo) {
        if (!value) {
            m_combo->setCurrentIndex(m_spec.optional ? 0 : -1);
        } else {
            int index = m_combo->findText(*value, Qt::MatchFixedString);
            if (index < 0) {
                m_combo->addItem(*value);
                index = m_combo->count() - 1;
            }
            m_combo->setCurrentIndex(index);
        }
    } else if (m_check) {
        m_check->setChecked(value && (value->compare(QLatin1String("true"), Qt::CaseInsensitive) == 0));
    } else if (m_spin) {
        bool ok = false;
        const int number = value ? value->toInt(&ok) : 0;
        if (ok && number < m_spin->minimum())
            m_spin->setMinimum(number);
        m_spin->setValue(ok ? number : m_spin->minimum());
    } else if (m_line) {
        m_line->setText(value.value_or(QString()));
    }
    m_updating = false;
}

std::optional<QString> FieldEditor::value() const
{
    if (m_combo) {
        const QString text = m_combo->currentText();
        if (m_combo->currentIndex() < 0 || (m_spec.optional && m_combo->currentIndex() == 0))
            return std::nullopt;
        return text;
    }
    if (m_check)
        return m_check->isChecked() ? QStringLiteral("true") : QStringLiteral("false");
    if (m_spin) {
        if (m_spec.optional && m_spin->value() == m_spec.minimum - 1)
            return std::nullopt;
        return QString::number(m_spin->value());
    }
    const QString text = m_line->text().trimmed();
    if (text.isEmpty() && m_spec.optional)
        return std::nullopt;
    return text;
}

void FieldEditor::clearDiagnostics()
{
    m_messages.clear();
    m_worstLevel = DiagnosticLevel::Info;
    updateDiagnosticLabel();
}

void FieldEditor::addDiagnostic(DiagnosticLevel level, const QString &message)
{
    m_messages << message;
    if (static_cast<int>(level) > static_cast<int>(m_worstLevel))
        m_worstLevel = level;
    updateDiagnosticLabel();
}

QString FieldEditor::diagnosticText() const
{
    return m_messages.join(QLatin1Char('\n'));
}

void FieldEditor::updateDiagnosticLabel()
{
    if (m_messages.isEmpty()) {
        m_diagnostic->clear();
        m_diagnostic->setVisible(false);
        m_editor->setStyleSheet(QString());
        return;
    }
    const char *icon = "info";
    const char *color = "#2f6f9f";
    if (m_worstLevel == DiagnosticLevel::Error) {
        icon = "error";
        color = "#c62828";
    } else if (m_worstLevel == DiagnosticLevel::Warning) {
        icon = "warning";
        color = "#8a6100";
    }
    QString html;
    for (const QString &message : m_messages) {
        html += QStringLiteral("<div><img src=\":/icons/status-%1.svg\" width=\"12\" height=\"12\"> "
                               "<span style=\"color:%2\">%3</span></div>")
                    .arg(QLatin1String(icon), QLatin1String(color), message.toHtmlEscaped());
    }
    m_diagnostic->setText(html);
    m_diagnostic->setVisible(true);
}

} // namespace accel::app
