// The Configure page's form: one group box per section (General/topology, Mixed precision+FP8,
// FSDP, DeepSpeed, Dynamo, Multi-node), one FieldEditor per config key. It owns the typed config
// being edited: edits go straight into that model, so the preview, validation and saving all
// read the same object.
#pragma once

#include "app/studio/fieldeditor.h"
#include "core/config/clusterconfig.h"
#include "core/config/diagnostic.h"

#include <QMap>
#include <QWidget>

#include <vector>

class QGroupBox;

namespace accel::app {

struct FieldBinding;

class ConfigForm : public QWidget {
    Q_OBJECT
public:
    explicit ConfigForm(QWidget *parent = nullptr);

    // Replaces the model and shows its values.
    void setConfig(const config::ClusterConfig &config);
    const config::ClusterConfig &config() const { return m_config; }

    // Shows each diagnostic beside the field of its key (or of the closest enclosing key shown
    // in the form); returns those that belong to no field.
    config::Diagnostics showDiagnostics(const config::Diagnostics &diagnostics);

    FieldEditor *field(const QString &key) const { return m_fields.value(key); }
    QStringList keys() const { return m_fields.keys(); }

    // Off (default): only the fields of the chosen distributed type and precision are shown
    // (fieldApplies), plus any field with a message; on: every field.
    void setShowAllFields(bool all);
    bool showsAllFields() const { return m_showAll; }
    bool isFieldShown(const QString &key) const;
    int shownFieldCount() const;

Q_SIGNALS:
    // The model changed through the form (`key` was edited).
    void configEdited(const QString &key);

private:
    void onFieldEdited(FieldEditor *editor, const FieldBinding *binding);
    FieldEditor *fieldForDiagnosticKey(const std::string &key) const;
    void refreshValues();
    void updateGroupTitles();
    void updateVisibility();

    config::ClusterConfig m_config;
    QMap<QString, FieldEditor *> m_fields;
    QMap<QString, QGroupBox *> m_groups;  // by group object name
    QMap<QString, QString> m_inputErrors; // key -> why the typed text was not accepted
    QStringList m_flagged;                // keys with a message beside them: always shown
    bool m_showAll = false;
};

} // namespace accel::app
