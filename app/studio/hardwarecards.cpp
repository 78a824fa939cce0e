#include "app/studio/hardwarecards.h"

#include <QFormLayout>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QStringList>
#include <QTableWidget>
#include <QVBoxLayout>

namespace accel::app {

namespace {

QLabel *valueLabel(const QString &text, QWidget *parent, const QString &objectName = {})
{
    auto *label = new QLabel(text.isEmpty() ? QStringLiteral("—") : text, parent);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->setWordWrap(true);
    if (!objectName.isEmpty())
        label->setObjectName(objectName);
    return label;
}

QGroupBox *card(const QString &title, const QString &objectName, QWidget *parent)
{
    auto *box = new QGroupBox(title, parent);
    box->setObjectName(objectName);
    return box;
}

// Compact CPU list: "0-7,16-23".
QString cpuRanges(const std::vector<int> &cpus)
{
    QStringList parts;
    for (size_t i = 0; i < cpus.size();) {
        size_t j = i;
        while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1)
            ++j;
        parts << (i == j ? QString::number(cpus[i]) : QStringLiteral("%1-%2").arg(cpus[i]).arg(cpus[j]));
        i = j + 1;
    }
    return parts.join(QLatin1Char(','));
}

QTableWidget *table(const QStringList &headers, int rows, QWidget *parent)
{
    auto *widget = new QTableWidget(rows, headers.size(), parent);
    widget->setHorizontalHeaderLabels(headers);
    widget->verticalHeader()->setVisible(false);
    widget->setEditTriggers(QAbstractItemView::NoEditTriggers);
    widget->setSelectionMode(QAbstractItemView::NoSelection);
    widget->horizontalHeader()->setStretchLastSection(true);
    widget->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
    widget->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    return widget;
}

void setCell(QTableWidget *widget, int row, int column, const QString &text)
{
    widget->setItem(row, column, new QTableWidgetItem(text));
}

void fitTable(QTableWidget *widget)
{
    widget->resizeColumnsToContents();
    int height = widget->horizontalHeader()->height() + 2 * widget->frameWidth();
    for (int row = 0; row < widget->rowCount(); ++row)
        height += widget->rowHeight(row);
    widget->setFixedHeight(height);
}
} // namespace

QString formatBytes(uint64_t bytes)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024.0 && unit < 5) {
        value /= 1024.0;
        ++unit;
    }
    return unit == 0 ? QStringLiteral("%1 B").arg(bytes)
                     : QStringLiteral("%1 %2").arg(value, 0, 'f', value < 10 ? 2 : 1).arg(QLatin1String(units[unit]));
}

QGroupBox *createSystemCard(const hardware::HardwareReport &report, QWidget *parent)
{
    auto *box = card(QObject::tr("System"), QStringLiteral("systemCard"), parent);
    auto *form = new QFormLayout(box);
    const auto &system = report.system;
    form->addRow(QObject::tr("Host:"), valueLabel(QString::fromStdString(system.hostname), box));
    form->addRow(QObject::tr("OS:"), valueLabel(QString::fromStdString(system.osName), box));
    form->addRow(
        QObject::tr("Kernel:"),
        valueLabel(QString::fromStdString(system.kernelName + " " + system.kernelRelease + " (" + system.machine + ")"),
                   box));
    if (!system.libcVersion.empty())
        form->addRow(QObject::tr("glibc:"), valueLabel(QString::fromStdString(system.libcVersion), box));
    return box;
}

QGroupBox *createCpuCard(const hardware::CpuInfo &cpu, QWidget *parent)
{
    auto *box = card(QObject::tr("CPU"), QStringLiteral("cpuCard"), parent);
    auto *form = new QFormLayout(box);
    form->addRow(QObject::tr("Model:"), valueLabel(QString::fromStdString(cpu.model), box, QStringLiteral("cpuModel")));
    form->addRow(QObject::tr("Vendor:"), valueLabel(QString::fromStdString(cpu.vendor), box));
    form->addRow(QObject::tr("Sockets:"), valueLabel(QString::number(cpu.sockets), box));
    form->addRow(QObject::tr("Physical cores:"),
                 valueLabel(QString::number(cpu.physicalCores), box, QStringLiteral("cpuPhysicalCores")));
    form->addRow(QObject::tr("Logical CPUs:"),
                 valueLabel(QString::number(cpu.logicalCpus), box, QStringLiteral("cpuLogicalCpus")));
    form->addRow(QObject::tr("Usable by this process:"), valueLabel(QString::number(cpu.availableCpus), box));
    QStringList flags;
    for (const auto &flag : cpu.flags)
        flags << QString::fromStdString(flag);
    form->addRow(QObject::tr("Features:"), valueLabel(flags.join(QLatin1Char(' ')), box));
    return box;
}

QGroupBox *createMemoryCard(const hardware::MemoryInfo &memory, const std::vector<hardware::NumaNode> &numa,
                            QWidget *parent)
{
    auto *box = card(QObject::tr("Memory and NUMA"), QStringLiteral("memoryCard"), parent);
    auto *layout = new QVBoxLayout(box);
    auto *form = new QFormLayout;
    form->addRow(QObject::tr("Total:"), valueLabel(formatBytes(memory.totalBytes), box, QStringLiteral("memoryTotal")));
    form->addRow(QObject::tr("Available:"), valueLabel(formatBytes(memory.availableBytes), box));
    form->addRow(
        QObject::tr("Swap:"),
        valueLabel(
            QObject::tr("%1 free of %2").arg(formatBytes(memory.swapFreeBytes), formatBytes(memory.swapTotalBytes)),
            box));
    form->addRow(QObject::tr("NUMA nodes:"),
                 valueLabel(numa.empty() ? QObject::tr("not reported") : QString::number(numa.size()), box));
    layout->addLayout(form);
    if (numa.size() > 1 || (numa.size() == 1 && !numa.front().cpus.empty())) {
        auto *nodes = table({QObject::tr("Node"), QObject::tr("CPUs"), QObject::tr("Memory")},
                            static_cast<int>(numa.size()), box);
        for (size_t i = 0; i < numa.size(); ++i) {
            const int row = static_cast<int>(i);
            setCell(nodes, row, 0, QString::number(numa[i].id));
            setCell(nodes, row, 1, cpuRanges(numa[i].cpus));
            setCell(nodes, row, 2,
                    numa[i].memoryTotalBytes ? formatBytes(numa[i].memoryTotalBytes) : QObject::tr("unknown"));
        }
        fitTable(nodes);
        layout->addWidget(nodes);
    }
    return box;
}

QGroupBox *createDiskCard(const std::vector<hardware::DiskInfo> &disks, QWidget *parent)
{
    auto *box = card(QObject::tr("Disks"), QStringLiteral("diskCard"), parent);
    auto *layout = new QVBoxLayout(box);
    if (disks.empty()) {
        layout->addWidget(valueLabel(QObject::tr("No disks reported."), box));
        return box;
    }
    auto *rows =
        table({QObject::tr("Path"), QObject::tr("Free"), QObject::tr("Total")}, static_cast<int>(disks.size()), box);
    for (size_t i = 0; i < disks.size(); ++i) {
        const int row = static_cast<int>(i);
        setCell(rows, row, 0, QString::fromStdString(disks[i].path));
        if (!disks[i].error.empty()) {
            setCell(rows, row, 1, QString::fromStdString(disks[i].error));
            continue;
        }
        setCell(rows, row, 1, formatBytes(disks[i].freeBytes));
        setCell(rows, row, 2, formatBytes(disks[i].totalBytes));
    }
    fitTable(rows);
    layout->addWidget(rows);
    return box;
}

QGroupBox *createNetworkCard(const std::vector<hardware::NetworkInterface> &network, QWidget *parent)
{
    auto *box = card(QObject::tr("Network"), QStringLiteral("networkCard"), parent);
    auto *layout = new QVBoxLayout(box);
    if (network.empty()) {
        layout->addWidget(valueLabel(QObject::tr("No network interfaces reported."), box));
        return box;
    }
    auto *rows = table({QObject::tr("Interface"), QObject::tr("State"), QObject::tr("Speed"), QObject::tr("MTU"),
                        QObject::tr("Addresses")},
                       static_cast<int>(network.size()), box);
    for (size_t i = 0; i < network.size(); ++i) {
        const auto &nic = network[i];
        const int row = static_cast<int>(i);
        QString name = QString::fromStdString(nic.name);
        if (nic.defaultRouteIpv4 || nic.defaultRouteIpv6)
            name += QObject::tr(" (default route)");
        setCell(rows, row, 0, name);
        setCell(rows, row, 1,
                nic.loopback ? QObject::tr("loopback") : (nic.up ? QObject::tr("up") : QObject::tr("down")));
        setCell(rows, row, 2, nic.speedMbps > 0 ? QObject::tr("%1 Mb/s").arg(nic.speedMbps) : QObject::tr("unknown"));
        setCell(rows, row, 3, nic.mtu > 0 ? QString::number(nic.mtu) : QStringLiteral("—"));
        QStringList addresses;
        for (const auto &address : nic.addresses)
            addresses << QStringLiteral("%1/%2").arg(QString::fromStdString(address.address)).arg(address.prefixLength);
        setCell(rows, row, 4, addresses.join(QStringLiteral(", ")));
    }
    fitTable(rows);
    layout->addWidget(rows);
    return box;
}

QGroupBox *createGpuCard(const hardware::GpuSection &gpu, QWidget *parent)
{
    auto *box = card(QObject::tr("GPUs"), QStringLiteral("gpuCard"), parent);
    auto *layout = new QVBoxLayout(box);
    if (gpu.gpus.empty()) {
        QString text = QObject::tr("No NVIDIA GPU / NVML not available.");
        if (!gpu.unavailableReason.empty())
            text += QLatin1Char('\n') + QString::fromStdString(gpu.unavailableReason);
        text += QLatin1Char('\n') + QObject::tr("Training runs on the CPU with the gloo backend.");
        layout->addWidget(valueLabel(text, box, QStringLiteral("gpuUnavailable")));
        return box;
    }
    auto *summary = new QFormLayout;
    summary->addRow(QObject::tr("Driver:"), valueLabel(QString::fromStdString(gpu.driverVersion), box));
    summary->addRow(QObject::tr("CUDA (driver):"), valueLabel(QString::fromStdString(gpu.cudaDriverVersion), box));
    summary->addRow(QObject::tr("Source:"), valueLabel(QString::fromStdString(gpu.source), box));
    layout->addLayout(summary);
    auto *rows = table({QObject::tr("#"), QObject::tr("Name"), QObject::tr("Memory used / total"),
                        QObject::tr("Compute"), QObject::tr("PCIe"), QObject::tr("NVLinks"), QObject::tr("Bus")},
                       static_cast<int>(gpu.gpus.size()), box);
    rows->setObjectName(QStringLiteral("gpuTable"));
    for (size_t i = 0; i < gpu.gpus.size(); ++i) {
        const auto &device = gpu.gpus[i];
        const int row = static_cast<int>(i);
        setCell(rows, row, 0, QString::number(device.index));
        setCell(rows, row, 1, QString::fromStdString(device.name));
        setCell(
            rows, row, 2,
            QStringLiteral("%1 / %2").arg(formatBytes(device.memoryUsedBytes), formatBytes(device.memoryTotalBytes)));
        setCell(rows, row, 3,
                device.hasComputeCapability()
                    ? QStringLiteral("%1.%2").arg(device.computeMajor).arg(device.computeMinor)
                    : QObject::tr("unknown"));
        setCell(rows, row, 4,
                device.pcieGeneration > 0 ? QStringLiteral("Gen%1 x%2").arg(device.pcieGeneration).arg(device.pcieWidth)
                                          : QObject::tr("unknown"));
        setCell(rows, row, 5, QString::number(device.nvlinkActiveLinks));
        setCell(rows, row, 6, QString::fromStdString(device.pciBusId));
    }
    fitTable(rows);
    layout->addWidget(rows);

    const auto &topology = gpu.topology;
    if (gpu.gpus.size() > 1 && !topology.empty()) {
        layout->addWidget(new QLabel(QObject::tr("Topology (NV<n>: NVLinks; PIX/PXB: PCIe switch; PHB: host bridge; "
                                                 "NODE/SYS: across NUMA nodes or sockets)"),
                                     box));
        const int n = static_cast<int>(topology.devices.size());
        QStringList headers;
        for (const auto &device : topology.devices)
            headers << QString::fromStdString(device);
        headers << QObject::tr("CPU affinity") << QObject::tr("NUMA");
        auto *matrix = table(headers, n, box);
        matrix->setObjectName(QStringLiteral("gpuTopology"));
        matrix->verticalHeader()->setVisible(true);
        matrix->setVerticalHeaderLabels(headers.mid(0, n));
        for (int i = 0; i < n; ++i) {
            for (int j = 0; j < n && static_cast<size_t>(i) < topology.links.size() &&
                            static_cast<size_t>(j) < topology.links[i].size();
                 ++j)
                setCell(matrix, i, j, QString::fromStdString(topology.links[i][j]));
            if (static_cast<size_t>(i) < topology.cpuAffinity.size())
                setCell(matrix, i, n, QString::fromStdString(topology.cpuAffinity[i]));
            if (static_cast<size_t>(i) < topology.numaAffinity.size())
                setCell(matrix, i, n + 1, QString::fromStdString(topology.numaAffinity[i]));
        }
        fitTable(matrix);
        layout->addWidget(matrix);
    }
    return box;
}

} // namespace accel::app
