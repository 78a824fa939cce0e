#include "app/studio/monitor/runscolumns.h"

#include "monitor/runsmodel.h"

#include <QHeaderView>
#include <QMenu>
#include <QSettings>
#include <QTableView>

#include <algorithm>

namespace accel::app {

RunsColumns::RunsColumns(monitor::RunsModel *model, QTableView *view) : QObject(view), m_model(model), m_view(view) {}

namespace {

QString columnSettingsKey(const QString &which)
{
    return QStringLiteral("runs/columns/") + which;
}

} // namespace

bool RunsColumns::isShown(int column) const
{
    return !m_view->isColumnHidden(column);
}

void RunsColumns::setShown(int column, bool shown)
{
    const QString key =
        column >= monitor::RunsModel::ColumnCount
            ? m_model->headerData(column, Qt::Horizontal, monitor::RunsModel::HyperparameterKeyRole).toString()
            : m_model->headerData(column, Qt::Horizontal).toString();
    QSettings settings;
    QStringList shownList = settings.value(columnSettingsKey(QStringLiteral("shown"))).toStringList();
    QStringList hiddenList = settings.value(columnSettingsKey(QStringLiteral("hidden"))).toStringList();
    shownList.removeAll(key);
    hiddenList.removeAll(key);
    (shown ? shownList : hiddenList).append(key);
    settings.setValue(columnSettingsKey(QStringLiteral("shown")), shownList);
    settings.setValue(columnSettingsKey(QStringLiteral("hidden")), hiddenList);
    m_view->setColumnHidden(column, !shown);
}

void RunsColumns::update()
{
    // Hyperparameters that tell the listed runs apart are shown, notes when a run has some; the
    // user's choices win.
    QList<monitor::Hyperparameters> values;
    bool anyNotes = false;
    for (int row = 0; row < m_model->rowCount(); ++row) {
        values.append(m_model->run(row).hyperparameters);
        anyNotes = anyNotes || !m_model->run(row).annotations.notes.isEmpty();
    }
    const QStringList differing = monitor::differingKeys(values);
    QSettings settings;
    const QStringList shownList = settings.value(columnSettingsKey(QStringLiteral("shown"))).toStringList();
    const QStringList hiddenList = settings.value(columnSettingsKey(QStringLiteral("hidden"))).toStringList();
    for (int column = 0; column < m_model->columnCount(); ++column) {
        const bool parameter = column >= monitor::RunsModel::ColumnCount;
        const QString key =
            parameter
                ? m_model->headerData(column, Qt::Horizontal, monitor::RunsModel::HyperparameterKeyRole).toString()
                : m_model->headerData(column, Qt::Horizontal).toString();
        bool shown = parameter ? differing.contains(key) : column != monitor::RunsModel::NotesColumn || anyNotes;
        if (shownList.contains(key))
            shown = true;
        if (hiddenList.contains(key))
            shown = false;
        m_view->setColumnHidden(column, !shown);
    }
    // What tells runs apart first: name, state, tags, the hyperparameters; then when, how and where.
    using Model = monitor::RunsModel;
    QList<int> order = {Model::NameColumn, Model::StateColumn, Model::TagsColumn};
    for (int column = Model::ColumnCount; column < m_model->columnCount(); ++column)
        order.append(column);
    order += {Model::StartedColumn, Model::DurationColumn, Model::NotesColumn,
              Model::ConfigColumn,  Model::HostColumn,     Model::IdColumn};
    QHeaderView *header = m_view->horizontalHeader();
    for (int visual = 0; visual < order.size(); ++visual) {
        const int from = header->visualIndex(order[visual]);
        if (from != visual)
            header->moveSection(from, visual);
    }
}

QMenu *RunsColumns::createMenu(QWidget *parent)
{
    auto *menu = new QMenu(parent);
    menu->addSection(tr("Columns"));
    for (int column = 0; column < m_model->columnCount(); ++column) {
        if (column == monitor::RunsModel::ColumnCount)
            menu->addSection(tr("Hyperparameters"));
        QAction *action = menu->addAction(m_model->headerData(column, Qt::Horizontal).toString());
        action->setCheckable(true);
        action->setChecked(isShown(column));
        connect(action, &QAction::toggled, this, [this, column](bool on) { setShown(column, on); });
    }
    return menu;
}

void RunsColumns::fit()
{
    // To their contents, but no column wider than a few words: long notes and values are tooltips.
    constexpr int kWidest = 280;
    m_view->resizeColumnsToContents();
    for (int column = 0; column < m_model->columnCount(); ++column)
        m_view->setColumnWidth(column, std::min(m_view->columnWidth(column), kWidest));
}

} // namespace accel::app
