#include "app/studio/fp8/fp8comparedialog.h"

#include "app/studio/fp8/fp8resultsmodel.h"
#include "app/studio/monitor/plotcurves.h"
#include "app/studio/monitor/qcustomplotinclude.h"
#include "app/studio/theme.h"
#include "launcher/accelcommand.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QEvent>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollBar>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QTemporaryDir>
#include <QVBoxLayout>

#include <algorithm>

namespace accel::app {

namespace {

QString shapeDescription(const QString &shape)
{
    if (shape == QLatin1String("gpt"))
        return QObject::tr("gpt (2 layers, n_embd 64)");
    if (shape == QLatin1String("gpt-deep"))
        return QObject::tr("gpt-deep (4 layers, n_embd 32)");
    if (shape == QLatin1String("gpt-tiny"))
        return QObject::tr("gpt-tiny (1 layer, n_embd 16, quick look)");
    return shape;
}

QColor precisionColor(const QString &precision)
{
    return rankColor(int(fp8BenchPrecisions().indexOf(precision)));
}

} // namespace

Fp8CompareDialog::Fp8CompareDialog(QWidget *parent)
    : QDialog(parent), m_accel(launcher::AccelCommand::defaultProgram()), m_model(new Fp8ResultsModel(this))
{
    setWindowTitle(tr("Compare FP8 Recipes"));
    setObjectName(QStringLiteral("fp8CompareDialog"));

    auto *what = new QGroupBox(tr("Train the gpt recipe from the same weights and batches under"), this);
    auto *form = new QFormLayout(what);
    auto *precisions = new QHBoxLayout;
    for (const QString &precision : fp8BenchPrecisions()) {
        auto *box = new QCheckBox(precision, what);
        box->setObjectName(QStringLiteral("precision_%1").arg(precision));
        box->setChecked(true);
        m_precisionBoxes << box;
        precisions->addWidget(box);
    }
    precisions->addStretch();
    form->addRow(tr("Precisions:"), precisions);
    auto *shapes = new QHBoxLayout;
    for (const QString &shape : fp8BenchShapes()) {
        auto *box = new QCheckBox(shapeDescription(shape), what);
        box->setObjectName(QStringLiteral("shape_%1").arg(shape));
        box->setProperty("shape", shape);
        box->setChecked(shape != QLatin1String("gpt-tiny"));
        m_shapeBoxes << box;
        shapes->addWidget(box);
    }
    shapes->addStretch();
    form->addRow(tr("Model shapes:"), shapes);
    auto *numbers = new QHBoxLayout;
    m_steps = new QSpinBox(what);
    m_steps->setObjectName(QStringLiteral("steps"));
    m_steps->setRange(10, 1000000);
    m_steps->setValue(500);
    m_steps->setToolTip(tr("Optimizer steps per run"));
    m_threads = new QSpinBox(what);
    m_threads->setObjectName(QStringLiteral("threads"));
    m_threads->setRange(1, 256);
    m_threads->setToolTip(tr("Torch threads per run (runs go one after another)"));
    numbers->addWidget(m_steps);
    numbers->addWidget(new QLabel(tr("Threads per run:"), what));
    numbers->addWidget(m_threads);
    numbers->addStretch();
    form->addRow(tr("Steps:"), numbers);

    m_runButton = new QPushButton(tr("&Run Comparison"), this);
    m_runButton->setObjectName(QStringLiteral("runButton"));
    m_cancelButton = new QPushButton(tr("&Cancel"), this);
    m_cancelButton->setObjectName(QStringLiteral("cancelButton"));
    m_progress = new QProgressBar(this);
    m_progress->setObjectName(QStringLiteral("progress"));
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_progressLabel = new QLabel(this);
    m_progressLabel->setObjectName(QStringLiteral("progressLabel"));
    auto *controls = new QHBoxLayout;
    controls->addWidget(m_runButton);
    controls->addWidget(m_cancelButton);
    controls->addWidget(m_progress, 1);
    controls->addWidget(m_progressLabel, 2);

    m_status = new QLabel(tr("Each run is one accel-worker process. On a CPU the FP8 runs are slower than "
                             "bf16: every FP8 GEMM is emulated (quantise, dequantise, float32 multiply)."),
                          this);
    m_status->setObjectName(QStringLiteral("status"));
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_table = new QTableView(this);
    m_table->setObjectName(QStringLiteral("resultsTable"));
    m_table->setModel(m_model);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_plotArea = new QWidget(this);
    m_plotLayout = new QHBoxLayout(m_plotArea);
    m_plotLayout->setContentsMargins(0, 0, 0, 0);
    auto *splitter = new QSplitter(Qt::Vertical, this);
    splitter->addWidget(m_table);
    splitter->addWidget(m_plotArea);
    splitter->setStretchFactor(1, 2);
    splitter->setChildrenCollapsible(false);
    m_splitter = splitter;

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &Fp8CompareDialog::reject);

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(what);
    layout->addLayout(controls);
    layout->addWidget(m_status);
    layout->addWidget(splitter, 1);
    layout->addWidget(buttons);

    connect(m_runButton, &QPushButton::clicked, this, &Fp8CompareDialog::run);
    connect(m_cancelButton, &QPushButton::clicked, this, &Fp8CompareDialog::cancel);
    updateButtons();
    resize(1100, 760);
}

Fp8CompareDialog::~Fp8CompareDialog()
{
    // The command's destructor (a child of this dialog) kills its process group; it goes before
    // the folder the runs write into.
    delete m_command;
}

void Fp8CompareDialog::setOptions(const Fp8ComparisonOptions &options)
{
    m_steps->setValue(options.steps);
    m_threads->setValue(options.threads);
    for (QCheckBox *box : std::as_const(m_shapeBoxes))
        box->setChecked(options.shapes.contains(box->property("shape").toString()));
    for (QCheckBox *box : std::as_const(m_precisionBoxes))
        box->setChecked(options.precisions.contains(box->text()));
}

Fp8ComparisonOptions Fp8CompareDialog::options() const
{
    Fp8ComparisonOptions options;
    options.steps = m_steps->value();
    options.threads = m_threads->value();
    for (QCheckBox *box : m_shapeBoxes) {
        if (box->isChecked())
            options.shapes << box->property("shape").toString();
    }
    for (QCheckBox *box : m_precisionBoxes) {
        if (box->isChecked())
            options.precisions << box->text();
    }
    options.outputDirectory = m_outputDirectory;
    return options;
}

bool Fp8CompareDialog::isRunning() const
{
    return m_command && m_command->isRunning();
}

qint64 Fp8CompareDialog::processId() const
{
    return isRunning() ? m_command->processId() : 0;
}

QString Fp8CompareDialog::statusText() const
{
    return m_status->text();
}

QString Fp8CompareDialog::progressText() const
{
    return m_progressLabel->text();
}

bool Fp8CompareDialog::run()
{
    if (isRunning())
        return false;
    Fp8ComparisonOptions chosen = options();
    if (chosen.shapes.isEmpty() || chosen.precisions.isEmpty()) {
        setStatus(tr("Choose at least one precision and one model shape."), true);
        return false;
    }
    m_runFolder = std::make_unique<QTemporaryDir>();
    if (!m_runFolder->isValid()) {
        setStatus(tr("Cannot create a folder for the runs: %1").arg(m_runFolder->errorString()), true);
        return false;
    }
    m_outputDirectory = m_runFolder->path();
    chosen.outputDirectory = m_outputDirectory;
    m_model->clear();
    clearPlots();
    m_errorLine.clear();
    m_lastErrorLine.clear();
    m_progress->setRange(0, chosen.steps * int(chosen.shapes.size() * chosen.precisions.size()));
    m_progress->setValue(0);
    m_progressLabel->setText(tr("Starting…"));
    setStatus(tr("Running accel bench fp8 (%1 runs of %2 steps)…")
                  .arg(chosen.shapes.size() * chosen.precisions.size())
                  .arg(chosen.steps),
              false);

    auto *command = new launcher::AccelCommand(this);
    command->setProgram(m_accel);
    m_command = command;
    connect(command, &launcher::AccelCommand::outputReceived, this, &Fp8CompareDialog::onOutput);
    connect(command, &launcher::AccelCommand::done, this, &Fp8CompareDialog::onDone);
    command->start(fp8BenchArguments(chosen));
    updateButtons();
    return true;
}

void Fp8CompareDialog::cancel()
{
    if (isRunning()) {
        m_progressLabel->setText(tr("Stopping…"));
        m_command->cancel();
    }
}

void Fp8CompareDialog::reject()
{
    cancel();
    QDialog::reject();
}

void Fp8CompareDialog::onOutput(const QByteArray &, const QByteArray &standardError)
{
    m_errorLine += standardError;
    int end;
    while ((end = int(m_errorLine.indexOf('\n'))) >= 0) {
        const QByteArray line = m_errorLine.left(end);
        m_errorLine.remove(0, end + 1);
        if (auto progress = parseFp8Progress(line))
            showProgress(*progress);
        else if (!line.trimmed().isEmpty() && !line.startsWith("QStandardPaths:"))
            m_lastErrorLine = QString::fromUtf8(line.trimmed());
    }
}

void Fp8CompareDialog::showProgress(const Fp8Progress &progress)
{
    if (progress.runs <= 0 || progress.steps <= 0)
        return;
    m_progress->setRange(0, progress.runs * progress.steps);
    m_progress->setValue((progress.run - 1) * progress.steps + progress.step);
    m_progressLabel->setText(tr("Run %1 of %2: %3 %4, step %5 of %6")
                                 .arg(progress.run)
                                 .arg(progress.runs)
                                 .arg(progress.shape, progress.precision)
                                 .arg(progress.step)
                                 .arg(progress.steps));
}

void Fp8CompareDialog::onDone(const launcher::AccelOutcome &outcome)
{
    m_command->deleteLater();
    m_command = nullptr;
    updateButtons();
    if (!m_errorLine.isEmpty())
        onOutput({}, QByteArray("\n"));
    if (outcome.cancelled) {
        m_progressLabel->setText(tr("Cancelled"));
        setStatus(tr("Cancelled: the benchmark and its runs were stopped."), false);
        Q_EMIT finished(false);
        return;
    }
    if (!outcome.succeeded()) {
        m_progressLabel->setText(tr("Failed"));
        setStatus(tr("accel bench fp8 failed (%1)%2")
                      .arg(outcome.describe(),
                           m_lastErrorLine.isEmpty() ? QString() : QStringLiteral(": ") + m_lastErrorLine),
                  true);
        Q_EMIT finished(false);
        return;
    }
    QString error;
    const auto comparison = parseFp8Comparison(outcome.standardOutput, &error);
    if (!comparison) {
        m_progressLabel->setText(tr("Failed"));
        setStatus(error, true);
        Q_EMIT finished(false);
        return;
    }
    m_progress->setValue(m_progress->maximum());
    m_progressLabel->setText(tr("Done"));
    showComparison(*comparison);
    setStatus(tr("%1 runs of %2 steps. Loss: training loss at the step; eval: final evaluation loss; "
                 "bytes as each recipe stores them. Runs in %3")
                  .arg(comparison->runs.size())
                  .arg(comparison->steps)
                  .arg(m_outputDirectory),
              false);
    Q_EMIT finished(true);
}

void Fp8CompareDialog::showComparison(const Fp8Comparison &comparison)
{
    m_model->setComparison(comparison);
    clearPlots();
    for (const QString &shape : comparison.shapes) {
        auto *plot = new QCustomPlot(m_plotArea);
        plot->setObjectName(QStringLiteral("lossPlot_%1").arg(shape));
        plot->setMinimumSize(320, 240);
        plot->plotLayout()->insertRow(0);
        plot->plotLayout()->addElement(0, 0, new QCPTextElement(plot, tr("%1: training loss").arg(shape)));
        plot->xAxis->setLabel(tr("step"));
        plot->yAxis->setLabel(tr("loss"));
        plot->legend->setVisible(true);
        plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
        for (const Fp8ComparisonRun &run : comparison.runs) {
            if (run.shape != shape)
                continue;
            const QColor color = precisionColor(run.precision);
            QCPGraph *training = plot->addGraph();
            training->setName(run.precision);
            training->setPen(QPen(color, 1.5));
            training->setData(run.lossSteps, run.loss, true);
            QCPGraph *evaluation = plot->addGraph();
            evaluation->setName(tr("%1 (eval)").arg(run.precision));
            evaluation->setPen(QPen(color, 1, Qt::DashLine));
            evaluation->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 4));
            evaluation->setData(run.evalLossSteps, run.evalLoss, true);
            evaluation->removeFromLegend();
        }
        plot->rescaleAxes();
        applyPalette(plot);
        m_plotLayout->addWidget(plot);
        m_plots << plot;
    }
    fitTableToRows();
}

// The table as tall as its rows (at least as tall as six of them, the precisions of one shape,
// also when the plots then get less than they would like); the plots take the rest.
void Fp8CompareDialog::fitTableToRows()
{
    m_table->resizeRowsToContents();
    const int rows = m_model->rowCount();
    const QHeaderView *header = m_table->horizontalHeader();
    const int chrome = header->sizeHint().height() + 2 * m_table->frameWidth() +
                       (m_table->horizontalScrollBar()->isVisible() ? m_table->horizontalScrollBar()->height() : 0);
    auto rowsHeight = [this](int count) {
        int height = 0;
        for (int row = 0; row < count; ++row)
            height += m_table->rowHeight(row);
        return height;
    };
    const int wanted = chrome + rowsHeight(rows);
    m_table->setMinimumHeight(chrome + rowsHeight(std::min(rows, 6)));
    const QList<int> sizes = m_splitter->sizes();
    const int total = sizes.value(0) + sizes.value(1);
    if (total <= 0)
        return;
    const int plots = std::max(total - wanted, m_plotArea->minimumSizeHint().height());
    m_splitter->setSizes({total - plots, plots});
}

void Fp8CompareDialog::clearPlots()
{
    for (QCustomPlot *plot : std::as_const(m_plots))
        delete plot;
    m_plots.clear();
}

void Fp8CompareDialog::applyPalette(QCustomPlot *plot) const
{
    // The window's palette (dark themes too), as the Monitor's charts.
    applyPaletteToPlot(plot, palette());
    QColor frame = palette().color(QPalette::WindowText);
    frame.setAlpha(40);
    plot->legend->setBrush(palette().color(QPalette::Base));
    plot->legend->setBorderPen(QPen(frame));
    plot->replot();
}

void Fp8CompareDialog::changeEvent(QEvent *event)
{
    QDialog::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) {
        for (QCustomPlot *plot : std::as_const(m_plots))
            applyPalette(plot);
    }
}

void Fp8CompareDialog::setStatus(const QString &text, bool error)
{
    m_status->setText(text);
    m_status->setStyleSheet(error ? QStringLiteral("color: #c0392b;") : QString());
}

void Fp8CompareDialog::updateButtons()
{
    const bool running = isRunning();
    m_runButton->setEnabled(!running);
    m_cancelButton->setEnabled(running);
}

} // namespace accel::app
