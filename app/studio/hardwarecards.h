// Readable cards (group boxes) for the sections of a hardware report: CPU, memory, NUMA, disks,
// network and GPUs with their topology matrix. Pure presentation: no detection here.
#pragma once

#include "core/hardware/hardwarereport.h"

#include <QString>

class QWidget;
class QGroupBox;

namespace accel::app {

// "31.2 GiB" style sizes.
QString formatBytes(uint64_t bytes);

QGroupBox *createSystemCard(const hardware::HardwareReport &report, QWidget *parent);
QGroupBox *createCpuCard(const hardware::CpuInfo &cpu, QWidget *parent);
QGroupBox *createMemoryCard(const hardware::MemoryInfo &memory, const std::vector<hardware::NumaNode> &numa,
                            QWidget *parent);
QGroupBox *createDiskCard(const std::vector<hardware::DiskInfo> &disks, QWidget *parent);
QGroupBox *createNetworkCard(const std::vector<hardware::NetworkInterface> &network, QWidget *parent);
// GPU list, or the reason none is shown ("no NVIDIA GPU / NVML not available"); the topology
// matrix when there are several GPUs.
QGroupBox *createGpuCard(const hardware::GpuSection &gpu, QWidget *parent);

} // namespace accel::app
