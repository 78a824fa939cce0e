// The multi-node cluster form on the offscreen platform: the host table, processes per host, main
// host and port lint live; Write is refused while there are errors and writes every node's
// config once they are fixed; the wizard's multi-node page opens it with the answers so far.
#include "app/studio/cluster/clusterform.h"
#include "app/studio/configwizard.h"
#include "core/config/configio.h"
#include "core/config/questionflow.h"

#include <QComboBox>
#include <QDir>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel;
using namespace accel::app;

namespace {

config::LocalMachine fakeLocal()
{
    config::LocalMachine local;
    local.names = {"localhost", "node0"};
    local.addresses = {"127.0.0.1", "10.0.0.10"};
    local.resolve = [](const std::string &name) -> std::vector<std::string> {
        if (name == "node0")
            return {"10.0.0.10"};
        if (name == "node1")
            return {"10.0.0.11"};
        return {};
    };
    local.portProblem = [](int port) {
        return port == 29400 ? std::string("port 29400 is already in use on this machine") : std::string();
    };
    return local;
}

config::ClusterConfig multiCpuBase()
{
    return *config::QuestionFlow::standard().build({{"machine_type", "MULTI_CPU"}, {"num_processes", "2"}});
}

} // namespace

class tst_ClusterForm : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void lintsLiveAndWritesEveryNode()
    {
        ClusterForm form(multiCpuBase());
        form.setLocalMachine(fakeLocal());
        form.show();
        QVERIFY(form.messages().contains(QStringLiteral("hosts: at least one host is required")));
        QVERIFY(!form.writeButton()->isEnabled());

        // Two hosts typed into the table with the Add button.
        auto *add = form.findChild<QPushButton *>(QStringLiteral("clusterAddHost"));
        QVERIFY(add);
        add->click();
        add->click();
        form.hostTable()->item(0, 0)->setText(QStringLiteral("node0"));
        form.hostTable()->item(1, 0)->setText(QStringLiteral("node0"));
        QVERIFY(form.messages().contains(
            QStringLiteral("hosts: host 'node0' is listed twice (positions 1 and 2); each node needs its own host")));
        form.hostTable()->item(1, 0)->setText(QStringLiteral("node1"));
        QCOMPARE(form.mainHostBox()->count(), 2);
        QCOMPARE(form.mainHostBox()->currentText(), QStringLiteral("node0"));

        form.processesBox()->setValue(3);
        form.hostTable()->item(1, 1)->setText(QStringLiteral("2")); // node1 has two devices
        QVERIFY(form.messages().contains(
            QStringLiteral("procs_per_host: host 'node1' has 2 device(s) but 3 processes per host were asked")));
        form.processesBox()->setValue(2);
        form.portBox()->setValue(29400);
        QVERIFY(form.messages().contains(QStringLiteral("port: port 29400 is already in use on this machine")));

        // Refused while the lint has errors: nothing written.
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("nodes"));
        form.setOutputFolder(folder);
        QVERIFY(!form.writeButton()->isEnabled());
        QVERIFY(!form.write().has_value());
        QVERIFY(!QDir(folder).exists());

        form.portBox()->setValue(29501);
        QVERIFY2(form.plan().ok(), qPrintable(form.messages().join(QLatin1Char('\n'))));
        QVERIFY(form.messages().isEmpty());
        QVERIFY(form.writeButton()->isEnabled());
        QSignalSpy written(&form, &ClusterForm::written);
        form.writeButton()->click();
        QCOMPARE(written.count(), 1);
        const QStringList paths = written.first().first().toStringList();
        QCOMPARE(paths,
                 (QStringList{folder + QStringLiteral("/node-0.yaml"), folder + QStringLiteral("/node-1.yaml")}));
        for (int rank = 0; rank < 2; ++rank) {
            auto loaded = config::loadConfigFile(paths[rank].toStdString());
            QVERIFY2(loaded.has_value(), loaded ? "" : loaded.error().toString().c_str());
            QCOMPARE(*loaded->machineRank, std::int64_t(rank));
            QCOMPARE(*loaded->numMachines, std::int64_t(2));
            QCOMPARE(*loaded->numProcesses, std::int64_t(4));
            QCOMPARE(*loaded->mainProcessIp, std::string("10.0.0.10"));
            QCOMPARE(*loaded->mainProcessPort, std::int64_t(29501));
            QCOMPARE(loaded->distributedType, config::DistributedType::MultiCpu);
        }

        // Choosing the other host as main: the port is left to the launch.
        form.mainHostBox()->setCurrentText(QStringLiteral("node1"));
        QVERIFY(form.plan().ok());
        QCOMPARE(form.plan().mainAddress, std::string("10.0.0.11"));
        QCOMPARE(form.messages(), QStringList{QStringLiteral("port: warning: port 29501 will be checked on node1 at "
                                                             "launch (the main host is not this machine)")});
    }

    void wizardOpensTheFormWithItsAnswers()
    {
        ConfigWizard wizard;
        QVERIFY(wizard.setAnswer("machine_type", "MULTI_CPU"));
        QVERIFY(wizard.setAnswer("num_machines", "2"));
        QVERIFY(wizard.setAnswer("main_process_ip", "node0"));
        QVERIFY(wizard.setAnswer("main_process_port", "29555"));
        QVERIFY(wizard.setAnswer("num_processes", "8"));
        QVERIFY(wizard.sectionPage("multi_node")->findChild<QPushButton *>(QStringLiteral("wizardClusterButton")));
        std::unique_ptr<ClusterForm> form(wizard.createClusterForm());
        form->setLocalMachine(fakeLocal());
        QCOMPARE(form->hostTable()->rowCount(), 2);
        QCOMPARE(form->hostTable()->item(0, 0)->text(), QStringLiteral("node0"));
        QCOMPARE(form->processesBox()->value(), 4);
        QCOMPARE(form->portBox()->value(), 29555);
        QVERIFY(form->messages().contains(QStringLiteral("hosts: host 2 has no name or address")));
        form->hostTable()->item(1, 0)->setText(QStringLiteral("node1"));
        QVERIFY2(form->plan().ok(), qPrintable(form->messages().join(QLatin1Char('\n'))));
        QCOMPARE(form->plan().nodes[1].distributedType, config::DistributedType::MultiCpu);
        QCOMPARE(*form->plan().nodes[1].numProcesses, std::int64_t(8));
    }
};

QTEST_MAIN(tst_ClusterForm)
#include "tst_clusterform.moc"
