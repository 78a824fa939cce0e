#include "app/cli/cmd_bench_plot.h"

#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>
#include <memory>

namespace accel::cli {

namespace {

const QColor palette[] = {QColor(0x44, 0x44, 0x44), QColor(0x1f, 0x77, 0xb4), QColor(0xd6, 0x27, 0x28),
                          QColor(0x2c, 0xa0, 0x2c), QColor(0x94, 0x67, 0xbd), QColor(0xff, 0x7f, 0x0e),
                          QColor(0x8c, 0x56, 0x4b)};

void drawPanel(QPainter &p, const QRectF &area, const QString &title, const std::vector<const BenchRun *> &runs,
               const QStringList &order)
{
    double maxStep = 1, low = INFINITY, high = -INFINITY;
    for (const BenchRun *run : runs) {
        for (const auto &[step, loss] : run->loss) {
            if (!std::isfinite(loss))
                continue;
            maxStep = std::max(maxStep, step);
            low = std::min(low, loss);
            high = std::max(high, loss);
        }
    }
    if (!std::isfinite(low)) {
        low = 0;
        high = 1;
    }
    const double pad = (high - low) * 0.05 + 1e-9;
    low -= pad;
    high += pad;
    const QRectF plot = area.adjusted(60, 30, -10, -40);
    p.setPen(Qt::black);
    p.drawText(QRectF(area.left(), area.top() + 4, area.width(), 20), Qt::AlignHCenter, title);
    p.drawRect(plot);
    auto x = [&](double step) { return plot.left() + step / maxStep * plot.width(); };
    auto y = [&](double loss) { return plot.bottom() - (loss - low) / (high - low) * plot.height(); };
    for (int i = 0; i <= 4; ++i) {
        const double value = low + (high - low) * i / 4;
        p.drawText(QRectF(area.left(), y(value) - 8, 55, 16), Qt::AlignRight | Qt::AlignVCenter,
                   QString::number(value, 'f', 2));
        const double step = maxStep * i / 4;
        p.drawText(QRectF(x(step) - 30, plot.bottom() + 4, 60, 16), Qt::AlignHCenter, QString::number(step, 'f', 0));
    }
    p.drawText(QRectF(plot.left(), plot.bottom() + 20, plot.width(), 16), Qt::AlignHCenter,
               QStringLiteral("optimizer step (training loss)"));
    for (const BenchRun *run : runs) {
        const int index = std::max<int>(0, int(order.indexOf(run->precision)));
        p.setPen(QPen(palette[index % 7], 1.5));
        QPainterPath path;
        bool started = false;
        for (const auto &[step, loss] : run->loss) {
            if (!std::isfinite(loss))
                continue;
            const QPointF point(x(step), y(loss));
            started ? path.lineTo(point) : path.moveTo(point);
            started = true;
        }
        p.drawPath(path);
    }
    double legendY = plot.top() + 8;
    for (const BenchRun *run : runs) {
        const int index = std::max<int>(0, int(order.indexOf(run->precision)));
        p.setPen(QPen(palette[index % 7], 3));
        p.drawLine(QPointF(plot.right() - 150, legendY + 6), QPointF(plot.right() - 125, legendY + 6));
        p.setPen(Qt::black);
        p.drawText(QPointF(plot.right() - 118, legendY + 11), run->precision);
        legendY += 18;
    }
}

} // namespace

bool writeLossCurves(const std::vector<BenchRun> &runs, const QString &path, QString *error)
{
    std::unique_ptr<QGuiApplication> app;
    if (!QGuiApplication::instance()) {
        // Text needs a platform; offscreen draws without a display.
        if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
            qputenv("QT_QPA_PLATFORM", "offscreen");
        static int argc = 1;
        static char name[] = "accel";
        static char *argv[] = {name, nullptr};
        app = std::make_unique<QGuiApplication>(argc, argv);
    }
    QStringList shapes, order;
    for (const BenchRun &run : runs) {
        if (!shapes.contains(run.shape))
            shapes << run.shape;
        if (!order.contains(run.precision))
            order << run.precision;
    }
    if (shapes.isEmpty()) {
        *error = QStringLiteral("no runs");
        return false;
    }
    const int panelWidth = 640, height = 420;
    QImage image(panelWidth * int(shapes.size()), height, QImage::Format_RGB32);
    image.fill(Qt::white);
    {
        QPainter painter(&image);
        painter.setRenderHint(QPainter::Antialiasing);
        for (int i = 0; i < shapes.size(); ++i) {
            std::vector<const BenchRun *> panel;
            for (const BenchRun &run : runs) {
                if (run.shape == shapes[i])
                    panel.push_back(&run);
            }
            drawPanel(painter, QRectF(i * panelWidth, 0, panelWidth, height), shapes[i], panel, order);
        }
    }
    if (!image.save(path, "PNG")) {
        *error = path + QStringLiteral(": cannot write");
        return false;
    }
    return true;
}

} // namespace accel::cli
