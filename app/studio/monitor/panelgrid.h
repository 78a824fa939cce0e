// PanelGrid: the Monitor's charts as a W&B-style grid of panels, one per logged key (and the
// built-in charts), in sections by the key's prefix (monitor/metricpanels.h). A panel appears when
// a run brings its key and has data, and can be hidden, widened, made taller or shorter, moved, and
// put on a log scale from its right-click menu; the arrangement is the project's (PanelLayout,
// saved as it changes). Hovering one panel moves the crosshair of every other panel with the same
// x along. X mode, smoothing and the redraw interval are the page's and apply to every panel.
#pragma once

#include "app/studio/monitor/metricpanels.h"
#include "app/studio/monitor/panellayout.h"

#include <QColor>
#include <QMap>
#include <QPointer>
#include <QTimer>
#include <QWidget>

class QMenu;
class QToolButton;
class QVBoxLayout;

namespace accel::monitor {
class MetricStore;
}

namespace accel::app {

class MetricPlot;

struct GridRun {
    const monitor::MetricStore *store = nullptr;
    QString label;
    QColor color;
};

class PanelGrid : public QWidget {
    Q_OBJECT
public:
    explicit PanelGrid(QWidget *parent = nullptr);
    ~PanelGrid() override;

    void setRuns(const QList<GridRun> &runs);
    // Loads the project's arrangement (and saves changes there from now on).
    void setProject(const QString &project);
    QString project() const { return m_project; }

    MetricPlot *builtIn(BuiltInChart chart) const { return m_builtIn.value(chart); }
    MetricPlot *panel(const QString &key) const;
    QStringList panelKeys() const; // every panel of the runs' keys, shown or not, in order
    QStringList shownKeys() const; // the panels laid out now (not hidden, with data), in order
    QStringList sections() const;  // the sections shown now, in order
    QString sectionOfPanel(const QString &key) const;
    QToolButton *sectionHeader(const QString &section) const;
    bool hasData() const; // any panel

    bool isPanelHidden(const QString &key) const;
    void setPanelHidden(const QString &key, bool hidden);
    void setPanelWidth(const QString &key, int columns);
    void setPanelHeight(const QString &key, PanelHeight height);
    void setPanelLogScale(const QString &key, bool logarithmic);
    bool movePanel(const QString &key, int steps); // among the shown panels of its section
    bool movePanelToFront(const QString &key);
    void setSectionCollapsed(const QString &section, bool collapsed);
    void resetLayout();
    const PanelLayout &layoutSettings() const { return m_layout; }
    int columns() const { return m_columns; }

    void setXMode(XMode mode);
    XMode xMode() const { return m_xMode; }
    void setSmoothing(double smoothing);
    void setRedrawInterval(int milliseconds);
    void setEmptyText(const QString &text); // on panels without data

    // The right-click menu of a panel (hide, log scale, width, height, move, export).
    QMenu *createPanelMenu(const QString &key, QWidget *parent);
    // Every panel with a check (shown or hidden), by section, and "Reset layout".
    void fillPanelsMenu(QMenu *menu);

Q_SIGNALS:
    void dataPresenceChanged(bool anyData);
    void exportRequested(const QString &key, bool png);

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    struct Section {
        QToolButton *header = nullptr;
        QWidget *body = nullptr;
    };
    MetricPlot *ensurePanel(const QString &key, bool systemOnly);
    void addKeys(const QStringList &names);
    bool isSystemOnly(const QString &name) const;
    bool hiddenByDefault(const QString &key) const;
    void attach(MetricPlot *plot);
    void relayout();
    void scheduleRelayout();
    void changed();     // the arrangement changed: save it, lay out again
    void applyLayout(); // log scales and which panels follow the runs, from m_layout
    Section &section(const QString &name);
    void onHovered(MetricPlot *source, double x);
    void onHoverLeft(MetricPlot *source);
    int columnsForWidth(int width) const;

    QList<GridRun> m_runs;
    QList<QMetaObject::Connection> m_storeConnections;
    QList<MetricPlot *> m_builtIn;
    QMap<QString, MetricPlot *> m_generic; // by key
    QHash<QString, QString> m_sectionOf;   // panel key -> section
    QMap<QString, Section> m_sections;
    QVBoxLayout *m_sectionsLayout = nullptr;
    PanelLayout m_layout;
    QString m_project;
    XMode m_xMode = XMode::Step;
    double m_smoothing = 0;
    int m_redrawInterval = 33;
    int m_columns = 3;
    QString m_emptyText;
    bool m_anyData = false;
    QTimer m_relayout;
};

} // namespace accel::app
