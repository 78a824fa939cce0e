#include "app/studio/monitor/panelgrid.h"

#include "app/studio/monitor/metricplot.h"
#include "monitor/metricstore.h"

#include <QActionGroup>
#include <QGridLayout>
#include <QMenu>
#include <QResizeEvent>
#include <QToolButton>
#include <QVBoxLayout>

namespace accel::app {

namespace {

// Narrow windows get fewer columns, so a panel never gets squeezed below a readable width.
constexpr int kTwoColumnsBelow = 900;
constexpr int kOneColumnBelow = 520;

} // namespace

PanelGrid::PanelGrid(QWidget *parent) : QWidget(parent)
{
    m_sectionsLayout = new QVBoxLayout(this);
    m_sectionsLayout->setContentsMargins(0, 0, 0, 0);
    m_sectionsLayout->setSpacing(2);
    m_sectionsLayout->addStretch(1);
    for (int chart = 0; chart < BuiltInChartCount; ++chart) {
        const QString key = panelKey(BuiltInChart(chart));
        m_sectionOf.insert(key, sectionOf(key, false));
        auto *plot = new MetricPlot(builtInCharts().at(chart), section(m_sectionOf.value(key)).body);
        plot->setObjectName(QStringLiteral("panel:") + key);
        m_builtIn.append(plot);
        attach(plot);
    }
    m_relayout.setSingleShot(true);
    m_relayout.setInterval(0);
    connect(&m_relayout, &QTimer::timeout, this, &PanelGrid::relayout);
    relayout();
}

PanelGrid::~PanelGrid()
{
    for (const auto &c : std::as_const(m_storeConnections))
        disconnect(c);
}

PanelGrid::Section &PanelGrid::section(const QString &name)
{
    auto found = m_sections.find(name);
    if (found != m_sections.end())
        return *found;
    Section created;
    created.header = new QToolButton(this);
    created.header->setObjectName(QStringLiteral("section:") + name);
    created.header->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    created.header->setAutoRaise(true);
    QFont bold = created.header->font();
    bold.setBold(true);
    created.header->setFont(bold);
    created.body = new QWidget(this);
    new QGridLayout(created.body);
    created.header->setVisible(false);
    created.body->setVisible(false);
    connect(created.header, &QToolButton::clicked, this,
            [this, name] { setSectionCollapsed(name, !m_layout.isCollapsed(name)); });
    return *m_sections.insert(name, created);
}

void PanelGrid::attach(MetricPlot *plot)
{
    plot->setXMode(m_xMode);
    plot->setSmoothing(m_smoothing);
    plot->setRedrawInterval(m_redrawInterval);
    plot->setEmptyText(m_emptyText);
    plot->setVisible(false);
    connect(plot, &MetricPlot::dataPresenceChanged, this, &PanelGrid::scheduleRelayout);
    connect(plot, &MetricPlot::hovered, this, [this, plot](double x) { onHovered(plot, x); });
    connect(plot, &MetricPlot::hoverLeft, this, [this, plot] { onHoverLeft(plot); });
    connect(plot, &MetricPlot::menuRequested, this, [this, plot](const QPoint &at) {
        const QString key = m_builtIn.contains(plot) ? plot->names().first() : m_generic.key(plot);
        QMenu *menu = createPanelMenu(key, this);
        menu->setAttribute(Qt::WA_DeleteOnClose);
        menu->popup(at);
    });
}

void PanelGrid::setRuns(const QList<GridRun> &runs)
{
    for (const auto &c : std::as_const(m_storeConnections))
        disconnect(c);
    m_storeConnections.clear();
    m_runs = runs;
    // Panels of keys no run has any more go; the keys of the runs get theirs.
    QStringList names;
    for (const GridRun &run : runs) {
        names += run.store->allScalarNames();
        m_storeConnections.append(connect(run.store, &monitor::MetricStore::namesAdded, this, &PanelGrid::addKeys));
    }
    names.removeDuplicates();
    for (auto it = m_generic.begin(); it != m_generic.end();) {
        if (!names.contains(it.key())) {
            m_sectionOf.remove(it.key());
            delete it.value();
            it = m_generic.erase(it);
        } else {
            ++it;
        }
    }
    addKeys(names);
    applyLayout(); // a hidden panel follows no run: it does no work
    scheduleRelayout();
}

bool PanelGrid::isSystemOnly(const QString &name) const
{
    bool seen = false;
    for (const GridRun &run : m_runs) {
        if (!run.store->allScalarNames().contains(name))
            continue;
        if (!run.store->isSystemName(name))
            return false;
        seen = true;
    }
    return seen;
}

void PanelGrid::addKeys(const QStringList &names)
{
    bool added = false;
    for (const QString &name : names) {
        if (shownByBuiltInChart(name) || isBookkeeping(name) || m_generic.contains(name))
            continue;
        MetricPlot *plot = ensurePanel(name, isSystemOnly(name));
        if (!isPanelHidden(name)) {
            for (const GridRun &run : std::as_const(m_runs))
                plot->addStore(run.store, run.label, run.color);
        }
        added = true;
    }
    if (added)
        scheduleRelayout();
}

MetricPlot *PanelGrid::ensurePanel(const QString &key, bool systemOnly)
{
    if (MetricPlot *existing = m_generic.value(key))
        return existing;
    const QString name = sectionOf(key, systemOnly);
    m_sectionOf.insert(key, name);
    auto *plot = new MetricPlot(specForKey(key, systemOnly), section(name).body);
    plot->setObjectName(QStringLiteral("panel:") + key);
    plot->setLogScale(m_layout.settings(key).logScale);
    m_generic.insert(key, plot);
    attach(plot);
    return plot;
}

MetricPlot *PanelGrid::panel(const QString &key) const
{
    const int chart = builtInChartOf(key);
    return chart >= 0 ? m_builtIn.value(chart) : m_generic.value(key);
}

QStringList PanelGrid::panelKeys() const
{
    QStringList keys;
    for (int chart = 0; chart < BuiltInChartCount; ++chart)
        keys.append(panelKey(BuiltInChart(chart)));
    keys += m_generic.keys();
    QStringList sections;
    for (const QString &key : std::as_const(keys))
        sections.append(m_sectionOf.value(key));
    sections.removeDuplicates();
    std::sort(sections.begin(), sections.end(), sectionLessThan);
    QStringList ordered;
    for (const QString &name : std::as_const(sections)) {
        QStringList inSection;
        for (const QString &key : std::as_const(keys)) {
            if (m_sectionOf.value(key) == name)
                inSection.append(key);
        }
        // Built-in charts keep their order until moved; other keys follow by name.
        std::stable_sort(inSection.begin(), inSection.end(), [](const QString &a, const QString &b) {
            const int ca = builtInChartOf(a), cb = builtInChartOf(b);
            if ((ca >= 0) != (cb >= 0))
                return ca >= 0;
            return false;
        });
        m_layout.sort(inSection);
        ordered += inSection;
    }
    return ordered;
}

QStringList PanelGrid::shownKeys() const
{
    QStringList keys;
    for (const QString &key : panelKeys()) {
        const MetricPlot *plot = panel(key);
        if (!isPanelHidden(key) && plot->hasData() && !m_layout.isCollapsed(m_sectionOf.value(key)))
            keys.append(key);
    }
    return keys;
}

QStringList PanelGrid::sections() const
{
    QStringList out;
    for (auto it = m_sections.cbegin(); it != m_sections.cend(); ++it) {
        if (it->header->isVisibleTo(this))
            out.append(it.key());
    }
    std::sort(out.begin(), out.end(), sectionLessThan);
    return out;
}

QString PanelGrid::sectionOfPanel(const QString &key) const
{
    return m_sectionOf.value(key);
}

QToolButton *PanelGrid::sectionHeader(const QString &name) const
{
    return m_sections.contains(name) ? m_sections.value(name).header : nullptr;
}

bool PanelGrid::hasData() const
{
    for (const QString &key : panelKeys()) {
        if (!isPanelHidden(key) && panel(key)->hasData())
            return true;
    }
    return false;
}

bool PanelGrid::hiddenByDefault(const QString &key) const
{
    // The supervisor's other readings (load, host memory, process counts) are there to add.
    return m_generic.contains(key) && m_sectionOf.value(key) == systemSection();
}

bool PanelGrid::isPanelHidden(const QString &key) const
{
    return m_layout.isHidden(key, hiddenByDefault(key));
}

void PanelGrid::setPanelHidden(const QString &key, bool hidden)
{
    MetricPlot *plot = panel(key);
    if (!plot)
        return;
    m_layout.setHidden(key, hidden);
    plot->clearStores();
    if (!hidden) {
        for (const GridRun &run : std::as_const(m_runs))
            plot->addStore(run.store, run.label, run.color);
        plot->replotNow();
    }
    changed();
}

void PanelGrid::setPanelWidth(const QString &key, int columns)
{
    m_layout.setWidth(key, columns);
    changed();
}

void PanelGrid::setPanelHeight(const QString &key, PanelHeight height)
{
    m_layout.setHeight(key, height);
    changed();
}

void PanelGrid::setPanelLogScale(const QString &key, bool logarithmic)
{
    m_layout.setLogScale(key, logarithmic);
    if (MetricPlot *plot = panel(key))
        plot->setLogScale(logarithmic);
    changed();
}

bool PanelGrid::movePanel(const QString &key, int steps)
{
    QStringList neighbours;
    for (const QString &other : shownKeys()) {
        if (m_sectionOf.value(other) == m_sectionOf.value(key))
            neighbours.append(other);
    }
    if (!m_layout.move(key, steps, neighbours))
        return false;
    changed();
    return true;
}

bool PanelGrid::movePanelToFront(const QString &key)
{
    QStringList neighbours;
    for (const QString &other : shownKeys()) {
        if (m_sectionOf.value(other) == m_sectionOf.value(key))
            neighbours.append(other);
    }
    if (!m_layout.moveToFront(key, neighbours))
        return false;
    changed();
    return true;
}

void PanelGrid::setSectionCollapsed(const QString &name, bool collapsed)
{
    m_layout.setCollapsed(name, collapsed);
    changed();
}

void PanelGrid::resetLayout()
{
    m_layout = PanelLayout();
    applyLayout();
    changed();
}

void PanelGrid::setProject(const QString &project)
{
    m_project = project;
    m_layout = PanelLayout::load(project);
    applyLayout();
    scheduleRelayout();
}

void PanelGrid::applyLayout()
{
    // Log scales as the layout says; only the panels it shows follow the runs.
    for (const QString &key : panelKeys()) {
        MetricPlot *plot = panel(key);
        plot->setLogScale(m_layout.settings(key).logScale);
        plot->clearStores();
        if (!isPanelHidden(key)) {
            for (const GridRun &run : std::as_const(m_runs))
                plot->addStore(run.store, run.label, run.color);
        }
    }
}

void PanelGrid::changed()
{
    m_layout.save(m_project);
    relayout();
}

void PanelGrid::setXMode(XMode mode)
{
    m_xMode = mode;
    for (const QString &key : panelKeys())
        panel(key)->setXMode(mode);
}

void PanelGrid::setSmoothing(double smoothing)
{
    m_smoothing = smoothing;
    for (const QString &key : panelKeys())
        panel(key)->setSmoothing(smoothing);
}

void PanelGrid::setRedrawInterval(int milliseconds)
{
    m_redrawInterval = milliseconds;
    for (const QString &key : panelKeys())
        panel(key)->setRedrawInterval(milliseconds);
}

void PanelGrid::setEmptyText(const QString &text)
{
    m_emptyText = text;
    for (const QString &key : panelKeys())
        panel(key)->setEmptyText(text);
}

void PanelGrid::scheduleRelayout()
{
    if (!m_relayout.isActive())
        m_relayout.start();
}

int PanelGrid::columnsForWidth(int width) const
{
    return width < kOneColumnBelow ? 1 : width < kTwoColumnsBelow ? 2 : PanelLayout::kMaximumWidth;
}

void PanelGrid::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    if (columnsForWidth(event->size().width()) != m_columns)
        scheduleRelayout();
}

void PanelGrid::relayout()
{
    m_relayout.stop();
    m_columns = columnsForWidth(width());
    const QStringList keys = panelKeys();
    // Sections in their order, each a header and a grid of its shown panels.
    while (m_sectionsLayout->count() > 1)
        delete m_sectionsLayout->takeAt(0);
    QStringList order = m_sections.keys();
    std::sort(order.begin(), order.end(), sectionLessThan);
    int at = 0;
    for (const QString &name : std::as_const(order)) {
        Section &s = m_sections[name];
        auto *grid = static_cast<QGridLayout *>(s.body->layout());
        while (grid->count() > 0)
            delete grid->takeAt(0);
        QList<MetricPlot *> shown;
        QStringList shownKeysHere;
        for (const QString &key : keys) {
            if (m_sectionOf.value(key) != name)
                continue;
            MetricPlot *plot = panel(key);
            const bool show = !isPanelHidden(key) && plot->hasData();
            plot->setVisible(show && !m_layout.isCollapsed(name));
            if (show) {
                shown.append(plot);
                shownKeysHere.append(key);
            }
        }
        const bool collapsed = m_layout.isCollapsed(name);
        s.header->setVisible(!shown.isEmpty());
        s.body->setVisible(!shown.isEmpty() && !collapsed);
        s.header->setArrowType(collapsed ? Qt::RightArrow : Qt::DownArrow);
        s.header->setText(shown.size() == 1 ? tr("%1 (1 panel)").arg(name)
                                            : tr("%1 (%2 panels)").arg(name).arg(shown.size()));
        if (shown.isEmpty())
            continue;
        m_sectionsLayout->insertWidget(at++, s.header);
        m_sectionsLayout->insertWidget(at++, s.body);
        // Reading order, each panel spanning its width; a panel that does not fit starts a row.
        int row = 0, column = 0;
        for (qsizetype i = 0; i < shown.size(); ++i) {
            const PanelSettings settings = m_layout.settings(shownKeysHere[i]);
            const int span = std::min(settings.width, m_columns);
            if (column + span > m_columns) {
                ++row;
                column = 0;
            }
            shown[i]->setFixedHeight(panelHeightPixels(settings.height));
            grid->addWidget(shown[i], row, column, 1, span);
            column += span;
        }
        for (int c = 0; c < PanelLayout::kMaximumWidth; ++c)
            grid->setColumnStretch(c, c < m_columns ? 1 : 0);
        grid->setContentsMargins(0, 0, 0, 4);
        grid->setSpacing(4);
    }
    const bool any = hasData();
    if (any != m_anyData) {
        m_anyData = any;
        Q_EMIT dataPresenceChanged(any);
    }
}

void PanelGrid::onHovered(MetricPlot *source, double x)
{
    for (const QString &key : shownKeys()) {
        MetricPlot *plot = panel(key);
        if (plot != source && plot->xMode() == source->xMode())
            plot->showSyncedCrosshair(x);
    }
}

void PanelGrid::onHoverLeft(MetricPlot *source)
{
    for (const QString &key : shownKeys()) {
        if (MetricPlot *plot = panel(key); plot != source)
            plot->hideCrosshair();
    }
}

QMenu *PanelGrid::createPanelMenu(const QString &key, QWidget *parent)
{
    auto *menu = new QMenu(parent);
    menu->setTitle(key);
    const PanelSettings settings = m_layout.settings(key);
    menu->addAction(tr("Hide panel"), this, [this, key] { setPanelHidden(key, true); });
    QAction *log = menu->addAction(tr("Log scale"));
    log->setCheckable(true);
    log->setChecked(settings.logScale);
    connect(log, &QAction::toggled, this, [this, key](bool on) { setPanelLogScale(key, on); });
    QMenu *width = menu->addMenu(tr("Width"));
    auto *widths = new QActionGroup(width);
    const QStringList widthNames = {tr("One column"), tr("Two columns"), tr("Full width")};
    for (int columns = 1; columns <= PanelLayout::kMaximumWidth; ++columns) {
        QAction *action = width->addAction(widthNames.at(columns - 1));
        action->setCheckable(true);
        action->setChecked(settings.width == columns);
        widths->addAction(action);
        connect(action, &QAction::triggered, this, [this, key, columns] { setPanelWidth(key, columns); });
    }
    QMenu *height = menu->addMenu(tr("Height"));
    auto *heights = new QActionGroup(height);
    const QList<std::pair<PanelHeight, QString>> heightNames = {
        {PanelHeight::Short, tr("Short")}, {PanelHeight::Normal, tr("Normal")}, {PanelHeight::Tall, tr("Tall")}};
    for (const auto &[value, text] : heightNames) {
        QAction *action = height->addAction(text);
        action->setCheckable(true);
        action->setChecked(settings.height == value);
        heights->addAction(action);
        const PanelHeight chosen = value;
        connect(action, &QAction::triggered, this, [this, key, chosen] { setPanelHeight(key, chosen); });
    }
    menu->addSeparator();
    menu->addAction(tr("Move left"), this, [this, key] { movePanel(key, -1); });
    menu->addAction(tr("Move right"), this, [this, key] { movePanel(key, 1); });
    menu->addAction(tr("Move to the start"), this, [this, key] { movePanelToFront(key); });
    menu->addSeparator();
    menu->addAction(tr("Export PNG…"), this, [this, key] { Q_EMIT exportRequested(key, true); });
    menu->addAction(tr("Export CSV…"), this, [this, key] { Q_EMIT exportRequested(key, false); });
    return menu;
}

void PanelGrid::fillPanelsMenu(QMenu *menu)
{
    QString current;
    for (const QString &key : panelKeys()) {
        MetricPlot *plot = panel(key);
        const bool hidden = isPanelHidden(key);
        if (!hidden && !plot->hasData() && m_builtIn.contains(plot))
            continue; // a built-in chart the runs have no data for
        if (m_sectionOf.value(key) != current) {
            current = m_sectionOf.value(key);
            menu->addSection(current);
        }
        QAction *action = menu->addAction(plot->title());
        action->setCheckable(true);
        action->setChecked(!hidden);
        connect(action, &QAction::toggled, this, [this, key](bool on) { setPanelHidden(key, !on); });
    }
    menu->addSeparator();
    menu->addAction(tr("Reset layout"), this, &PanelGrid::resetLayout);
}

} // namespace accel::app
