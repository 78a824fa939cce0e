// Cards for the Hardware page's Cluster section: one per checked host (status, accel version, CPUs,
// memory and GPUs from its accel.env report, or the message and what to do), and the table of
// the network pre-flight's verdicts. Pure presentation.
#pragma once

#include "app/studio/cluster/clusterreports.h"

class QGroupBox;
class QPushButton;
class QTableWidget;
class QWidget;

namespace accel::app {

// Object names: "hostCard:<host>", and inside it "hostStatus:<host>" (property "status": the
// status word), "hostAccel:", "hostCpus:", "hostMemory:", "hostGpus:", "hostMessage:" and
// "hostFix:<host>". `reviewKey` receives the card's "Review host key..."
// button (host_key_unknown / host_key_changed with a key), else nullptr; `install` its "Install accel
// here" button ("installAccel:<host>", where offersInstall), else nullptr.
QGroupBox *createHostCard(const HostCheck &check, const QString &localVersion, QWidget *parent, QPushButton **reviewKey,
                          QPushButton **install = nullptr);
// One row per check: check, host, status, message and what to do ("doctorChecks").
QTableWidget *createDoctorTable(const DoctorReport &report, QWidget *parent);

} // namespace accel::app
