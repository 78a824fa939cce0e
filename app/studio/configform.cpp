#include "app/studio/configform.h"

#include "app/studio/configbinding.h"
#include "app/studio/fieldrelevance.h"

#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

namespace accel::app {

ConfigForm::ConfigForm(QWidget *parent) : QWidget(parent)
{
    // Two independent columns of group boxes keep the form short enough to read without much
    // scrolling: general, FSDP and multi-node on the left; precision, DeepSpeed and Dynamo on the right.
    auto *columns = new QHBoxLayout(this);
    columns->setContentsMargins(4, 4, 4, 4);
    QVBoxLayout *column[2] = {new QVBoxLayout, new QVBoxLayout};
    for (const FieldGroup &group : configFieldGroups()) {
        auto *box = new QGroupBox(group.title, this);
        box->setObjectName(group.objectName);
        m_groups.insert(group.objectName, box);
        auto *form = new QFormLayout(box);
        form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
        // A long label goes above its field when the column is narrow (1024 px windows), instead of
        // widening the form past its scroll area.
        form->setRowWrapPolicy(QFormLayout::WrapLongRows);
        // When the block applies, in a wrapping line: in the title it would set the column's
        // minimum width (a group box title never wraps).
        auto *hint = new QLabel(box);
        hint->setObjectName(QStringLiteral("groupHint"));
        hint->setWordWrap(true);
        hint->setVisible(false);
        form->addRow(hint);
        for (const FieldBinding &binding : group.fields) {
            auto *editor = new FieldEditor(binding.spec, box);
            auto *label = new QLabel(binding.spec.label + QLatin1Char(':'), box);
            label->setToolTip(binding.spec.key);
            label->setBuddy(editor->editorWidget());
            form->addRow(label, editor);
            m_fields.insert(binding.spec.key, editor);
            const FieldBinding *bindingPointer = &binding;
            connect(editor, &FieldEditor::edited, this,
                    [this, editor, bindingPointer] { onFieldEdited(editor, bindingPointer); });
        }
        column[group.column == 0 ? 0 : 1]->addWidget(box);
    }
    for (QVBoxLayout *layout : column) {
        layout->addStretch(1);
        columns->addLayout(layout, 1);
    }
    config::applyDefaults(m_config);
    refreshValues();
}

void ConfigForm::setConfig(const config::ClusterConfig &config)
{
    m_config = config;
    m_inputErrors.clear();
    refreshValues();
}

void ConfigForm::updateGroupTitles()
{
    // Blocks that the chosen topology does not use stay editable (Accelerate keeps them in the
    // file) but say when they apply; validation warns about them too.
    struct Hint {
        const char *group;
        bool used;
        QString when;
    };
    const Hint hints[] = {
        {"group:fsdp", m_config.distributedType == config::DistributedType::Fsdp,
         tr("Used when distributed_type is FSDP.")},
        {"group:deepspeed", m_config.distributedType == config::DistributedType::DeepSpeed,
         tr("Used when distributed_type is DEEPSPEED.")},
        {"group:multinode", m_config.numMachines.value_or(1) > 1, tr("Used when num_machines > 1.")},
    };
    for (const Hint &hint : hints) {
        QGroupBox *box = m_groups.value(QString::fromLatin1(hint.group));
        auto *label = box ? box->findChild<QLabel *>(QStringLiteral("groupHint")) : nullptr;
        if (!label)
            continue;
        label->setText(hint.when);
        label->setVisible(!hint.used);
    }
}

void ConfigForm::setShowAllFields(bool all)
{
    m_showAll = all;
    updateVisibility();
}

bool ConfigForm::isFieldShown(const QString &key) const
{
    FieldEditor *editor = m_fields.value(key);
    return editor && !editor->isHidden() && editor->parentWidget() && !editor->parentWidget()->isHidden();
}

int ConfigForm::shownFieldCount() const
{
    int shown = 0;
    for (auto it = m_fields.cbegin(); it != m_fields.cend(); ++it)
        shown += isFieldShown(it.key()) ? 1 : 0;
    return shown;
}

void ConfigForm::updateVisibility()
{
    for (QGroupBox *box : std::as_const(m_groups)) {
        auto *form = qobject_cast<QFormLayout *>(box->layout());
        bool any = false;
        for (int row = 0; form && row < form->rowCount(); ++row) {
            QLayoutItem *item = form->itemAt(row, QFormLayout::FieldRole);
            auto *editor = item ? qobject_cast<FieldEditor *>(item->widget()) : nullptr; // none: the hint
            if (!editor)
                continue;
            const QString key = m_fields.key(editor);
            const bool show = m_showAll || m_flagged.contains(key) || fieldApplies(key, m_config);
            form->setRowVisible(row, show);
            any = any || show;
        }
        box->setVisible(any);
    }
}

void ConfigForm::refreshValues()
{
    updateGroupTitles();
    updateVisibility();
    for (const FieldGroup &group : configFieldGroups()) {
        for (const FieldBinding &binding : group.fields) {
            if (FieldEditor *editor = m_fields.value(binding.spec.key))
                editor->setValue(binding.get(m_config));
        }
    }
}

void ConfigForm::onFieldEdited(FieldEditor *editor, const FieldBinding *binding)
{
    const QString error = binding->set(m_config, editor->value());
    if (error.isEmpty())
        m_inputErrors.remove(binding->spec.key);
    else
        m_inputErrors.insert(binding->spec.key, error);
    updateGroupTitles();
    updateVisibility();
    Q_EMIT configEdited(binding->spec.key);
}

FieldEditor *ConfigForm::fieldForDiagnosticKey(const std::string &key) const
{
    // "fsdp_config.fsdp_version" maps to its field; a key the form does not show falls back to
    // the closest enclosing key that it does ("fp8_config.override_linear_precision" -> none).
    QString candidate = QString::fromStdString(key);
    while (!candidate.isEmpty()) {
        if (FieldEditor *editor = m_fields.value(candidate))
            return editor;
        const int dot = candidate.lastIndexOf(QLatin1Char('.'));
        if (dot < 0)
            break;
        candidate.truncate(dot);
    }
    return nullptr;
}

config::Diagnostics ConfigForm::showDiagnostics(const config::Diagnostics &diagnostics)
{
    for (FieldEditor *editor : std::as_const(m_fields))
        editor->clearDiagnostics();
    const QStringList flaggedBefore = m_flagged;
    m_flagged = m_inputErrors.keys();
    for (auto it = m_inputErrors.cbegin(); it != m_inputErrors.cend(); ++it)
        m_fields.value(it.key())->addDiagnostic(DiagnosticLevel::Error, it.value());
    config::Diagnostics unplaced;
    for (const config::Diagnostic &diagnostic : diagnostics) {
        FieldEditor *editor = fieldForDiagnosticKey(diagnostic.key);
        if (!editor) {
            unplaced.push_back(diagnostic);
            continue;
        }
        editor->addDiagnostic(diagnostic.severity == config::Severity::Error ? DiagnosticLevel::Error
                                                                             : DiagnosticLevel::Warning,
                              QString::fromStdString(diagnostic.message));
        if (diagnostic.severity == config::Severity::Error)
            m_flagged.append(m_fields.key(editor));
    }
    if (m_flagged != flaggedBefore)
        updateVisibility();
    return unplaced;
}

} // namespace accel::app
