// The flag/config merge rules of `accelerate launch` (facts 3.2) and accel's deliberate
// differences, as plain data.
#include "core/config/validation.h"
#include "launcher/launchflags.h"
#include "launcher/launchmerge.h"
#include "launcher/ports.h"

#include <QProcess>
#include <QtTest>

using namespace accel::launcher;

namespace {

ArgValue cfg(const std::string &text, bool isBool = false)
{
    ArgValue value;
    value.text = text;
    value.origin = Origin::Config;
    value.isBool = isBool;
    return value;
}

accel::Result<LaunchSettings> merge(std::map<std::string, std::string> flags,
                                    const std::optional<ConfigView> &view = std::nullopt, int gpus = 0, EnvMap env = {})
{
    LaunchRequest request;
    request.flags = std::move(flags);
    request.program.target = "train.py";
    request.environment = std::move(env);
    HostFacts host;
    host.physicalCores = 8;
    host.acceleratorCount = gpus;
    host.torchVersion = "";
    return mergeLaunchSettings(request, view, host);
}

bool hasNote(const LaunchSettings &settings, const std::string &part)
{
    for (const std::string &note : settings.notes) {
        if (note.find(part) != std::string::npos)
            return true;
    }
    return false;
}

} // namespace

class tst_LaunchMerge : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void configFileChoice()
    {
        LaunchRequest request;
        QCOMPARE(configFileToLoad(request, "/d.yaml", true), std::string("/d.yaml"));
        QCOMPARE(configFileToLoad(request, "/d.yaml", false), std::string());
        request.flags["cpu"] = "true"; // --cpu skips the default config (Accelerate's rule)
        QCOMPARE(configFileToLoad(request, "/d.yaml", true), std::string());
        request.flags["config_file"] = "/c.yaml";
        QCOMPARE(configFileToLoad(request, "/d.yaml", true), std::string("/c.yaml"));
    }

    void noConfigNoAcceleratorStartsOne()
    {
        auto settings = merge({});
        QVERIFY(settings);
        QCOMPARE(settings->numProcesses, 1);
        QCOMPARE(settings->launcher, LauncherKind::Simple);
        QCOMPARE(settings->distributedType, std::string("NO"));
        QVERIFY(hasNote(*settings, "0 processes"));
    }

    void noConfigTwoGpusSwitchesToMultiGpu()
    {
        auto settings = merge({}, std::nullopt, 2);
        QVERIFY(settings);
        QCOMPARE(settings->numProcesses, 2);
        QCOMPARE(settings->launcher, LauncherKind::Torchrun);
        QCOMPARE(settings->distributedType, std::string("MULTI_GPU"));
    }

    void invalidCombinations()
    {
        auto twoModes = merge({{"cpu", "true"}, {"use_fsdp", "true"}});
        QVERIFY(!twoModes);
        QCOMPARE(twoModes.error().code, accel::ErrorCode::InvalidInput);
        QVERIFY(twoModes.error().message.find("--cpu") != std::string::npos);
        QVERIFY(!merge({{"module", "true"}, {"no_python", "true"}}));
        QVERIFY(!merge({{"multi_gpu", "true"}, {"num_processes", "1"}}));
        QVERIFY(!merge({{"multi_gpu", "true"}, {"num_processes", "2"}, {"gpu_ids", "0"}}, std::nullopt, 2));
        auto tpu = merge({{"tpu", "true"}});
        QVERIFY(!tpu);
        QCOMPARE(tpu.error().code, accel::ErrorCode::Unsupported);
        auto badNumber = merge({{"num_processes", "two"}});
        QVERIFY(!badNumber);
        QVERIFY(badNumber.error().toString().find("two") != std::string::npos);
        QVERIFY(!merge({{"num_processes", "3"}, {"num_machines", "2"}, {"main_process_ip", "h"}}));
        QVERIFY(!merge({{"num_processes", "4"}, {"num_machines", "2"}})); // multi-node needs main_process_ip
    }

    // The rules the merged flags share with a config file are config::validate's, in its words.
    void sharedRulesAreTheConfigRules()
    {
        namespace rules = accel::config::rules;
        const auto refusal = [](std::map<std::string, std::string> flags) {
            auto merged = merge(std::move(flags));
            return merged ? std::string("accepted") : merged.error().message;
        };
        QCOMPARE(refusal({{"num_processes", "3"}, {"num_machines", "2"}, {"main_process_ip", "h"}}),
                 "num_processes: " + *rules::numProcesses(3, 2));
        QCOMPARE(
            refusal({{"num_processes", "4"}, {"num_machines", "2"}, {"machine_rank", "2"}, {"main_process_ip", "h"}}),
            "machine_rank: " + *rules::machineRank(2, 2));
        QCOMPARE(refusal({{"num_processes", "4"}, {"num_machines", "2"}}),
                 "main_process_ip: " + *rules::mainProcessIp(false, 2));
        QCOMPARE(refusal({{"use_parallelism_config", "true"}, {"num_processes", "2"}}),
                 "parallelism_config: " + *rules::parallelismConfig(false, 1));
        QCOMPARE(refusal({{"use_parallelism_config", "true"}, {"use_fsdp", "true"}, {"num_processes", "2"}}),
                 "parallelism_config: " + *rules::parallelismConfig(true, 1));
    }

    void minusOneProcessesNeedsFlag()
    {
        ConfigView view;
        view.path = "c.yaml";
        view.top["distributed_type"] = cfg("MULTI_GPU");
        view.top["num_processes"] = cfg("-1");
        auto settings = merge({}, view, 2);
        QVERIFY(!settings);
        QVERIFY(settings.error().toString().find("c.yaml") != std::string::npos);
        auto typed = merge({{"num_processes", "2"}}, view, 2);
        QVERIFY(typed);
        QCOMPARE(typed->numProcesses, 2);
    }

    void modeFlagOverridesConfigType()
    {
        ConfigView view;
        view.top["distributed_type"] = cfg("FSDP");
        view.top["num_processes"] = cfg("2");
        auto fromConfig = merge({}, view, 2);
        QVERIFY(fromConfig && fromConfig->useFsdp);
        auto deepspeed = merge({{"use_deepspeed", "true"}}, view, 2);
        QVERIFY(deepspeed);
        QVERIFY(!deepspeed->useFsdp);
        QCOMPARE(deepspeed->launcher, LauncherKind::DeepSpeed);
        // --cpu: simple launcher whatever the config says.
        auto cpu = merge({{"cpu", "true"}}, view);
        QVERIFY(cpu);
        QCOMPARE(cpu->launcher, LauncherKind::Simple);
        QCOMPARE(cpu->distributedType, std::string("MULTI_CPU"));
    }

    void ignoredConfigScalars()
    {
        ConfigView view;
        view.top["distributed_type"] = cfg("MULTI_CPU");
        view.top["num_processes"] = cfg("2");
        view.top["enable_cpu_affinity"] = cfg("true", true);
        view.top["rdzv_backend"] = cfg("c10d");
        auto settings = merge({}, view);
        QVERIFY(settings);
        QVERIFY(settings->enableCpuAffinity);
        QVERIFY(hasNote(*settings, "enable_cpu_affinity"));
        QVERIFY(hasNote(*settings, "config rdzv_backend: c10d is applied"));
        QVERIFY(hasNote(*settings, "rdzv_backend c10d on one machine"));
        QVERIFY(hasNote(*settings, "mpirun/SLURM"));
    }

    // --rdzv_backend, --rdzv_endpoint and every rdzv_conf key: acted on, noted or refused by name.
    void rendezvousFlags()
    {
        const std::map<std::string, std::string> two = {{"cpu", "true"},
                                                        {"num_processes", "2"},
                                                        {"num_machines", "2"},
                                                        {"main_process_ip", "10.0.0.5"},
                                                        {"main_process_port", "29555"},
                                                        {"rdzv_backend", "c10d"}};
        auto with = [&](std::map<std::string, std::string> extra) {
            auto flags = two;
            for (auto &[key, value] : extra)
                flags[key] = value;
            return merge(flags);
        };
        auto refusal = [&](std::map<std::string, std::string> extra) {
            auto merged = with(std::move(extra));
            return merged ? std::string("accepted") : merged.error().toString();
        };
        auto plain = with({});
        QVERIFY(plain);
        QVERIFY(plain->machineRankAtRendezvous());
        QCOMPARE(plain->rendezvous.host, std::string("10.0.0.5"));
        QCOMPARE(plain->rendezvous.port, 29555);
        QCOMPARE(plain->rendezvous.joinTimeoutS, 600.0);
        QCOMPARE(plain->rendezvous.readTimeoutS, 60.0);
        QCOMPARE(plain->rendezvous.isHost, -1);
        QVERIFY(hasNote(*plain, "agree on machine ranks at 10.0.0.5:29555"));

        auto endpoint = merge({{"cpu", "true"},
                               {"num_processes", "2"},
                               {"num_machines", "2"},
                               {"rdzv_backend", "c10d"},
                               {"rdzv_endpoint", "node0"}}); // no main_process_ip needed; torchrun's port 29400
        QVERIFY2(endpoint, endpoint ? "" : endpoint.error().toString().c_str());
        QCOMPARE(endpoint->rendezvous.host, std::string("node0"));
        QCOMPARE(endpoint->rendezvous.port, 29400);
        auto v6 = with({{"rdzv_endpoint", "[::1]:5"}});
        QVERIFY(v6);
        QCOMPARE(v6->rendezvous.host, std::string("::1"));
        QCOMPARE(v6->rendezvous.port, 5);
        QVERIFY(refusal({{"rdzv_endpoint", "h:99999"}}).find("--rdzv_endpoint") != std::string::npos);

        auto conf = with({{"rdzv_conf", "join_timeout=5, read_timeout=7,is_host=TRUE"}});
        QVERIFY(conf);
        QCOMPARE(conf->rendezvous.joinTimeoutS, 5.0);
        QCOMPARE(conf->rendezvous.readTimeoutS, 7.0);
        QCOMPARE(conf->rendezvous.isHost, 1);
        auto noted = with({{"rdzv_conf", "last_call_timeout=5,keep_alive_interval=2,store_type=tcp"}});
        QVERIFY(noted);
        QVERIFY(hasNote(*noted, "rdzv_conf last_call_timeout is not used"));
        QVERIFY(hasNote(*noted, "rdzv_conf keep_alive_interval is not used"));
        QVERIFY(refusal({{"rdzv_conf", "colour=blue"}}).find("unknown key 'colour'") != std::string::npos);
        QVERIFY(refusal({{"rdzv_conf", "timeout=30"}}).find("join_timeout") != std::string::npos);
        QVERIFY(refusal({{"rdzv_conf", "join_timeout=0"}}).find("join_timeout: expected") != std::string::npos);
        QVERIFY(refusal({{"rdzv_conf", "is_host=maybe"}}).find("is_host") != std::string::npos);
        QVERIFY(refusal({{"rdzv_conf", "store_type=file"}}).find("store_type") != std::string::npos);
        QVERIFY(refusal({{"rdzv_conf", "join_timeout"}}).find("join_timeout has no value") != std::string::npos);
        QVERIFY(refusal({{"rdzv_backend", "etcd"}}).find("rdzv_backend: etcd needs an etcd server") !=
                std::string::npos);
        QVERIFY(refusal({{"rdzv_backend", "zookeeper"}}).find("expected static or c10d") != std::string::npos);

        auto typedRank = with({{"machine_rank", "1"}});
        QVERIFY(typedRank);
        QCOMPARE(typedRank->machineRank, 0); // assigned at rendezvous
        QVERIFY(hasNote(*typedRank, "machine_rank 1 is not used"));
        QVERIFY(!merge({{"cpu", "true"}, {"num_processes", "2"}, {"num_machines", "2"}, {"rdzv_backend", "c10d"}}));

        auto statics = merge({{"cpu", "true"},
                              {"num_processes", "2"},
                              {"num_machines", "2"},
                              {"machine_rank", "1"},
                              {"rdzv_endpoint", "10.0.0.9:29611"},
                              {"rdzv_conf", "timeout=30"}});
        QVERIFY(statics);
        QVERIFY(!statics->machineRankAtRendezvous());
        QCOMPARE(statics->machineRank, 1);
        QCOMPARE(statics->mainProcessIp, std::string("10.0.0.9"));
        QCOMPARE(statics->mainProcessPort, 29611);
        QVERIFY(hasNote(*statics, "rdzv_conf timeout=30 is not used with rdzv_backend static"));

        // A DeepSpeed filter without --deepspeed_hostfile (which sends the launch to its hosts) is noted.
        auto filterOnly = merge({{"cpu", "true"}, {"deepspeed_exclusion_filter", "node1"}});
        QVERIFY(filterOnly);
        QVERIFY(hasNote(*filterOnly, "deepspeed_exclusion_filter is not used: it filters the hosts of "
                                     "--deepspeed_hostfile"));
    }

    void threadsFollowAccelerate()
    {
        auto inherited = merge({{"cpu", "true"}, {"num_processes", "2"}}, std::nullopt, 0, {{"OMP_NUM_THREADS", "3"}});
        QVERIFY(inherited);
        QCOMPARE(inherited->threadsPerProcess, 3);
        auto mpiLocal = merge({{"cpu", "true"}, {"num_processes", "2"}}, std::nullopt, 0, {{"MPI_LOCALNRANKS", "8"}});
        QVERIFY(mpiLocal);
        QCOMPARE(mpiLocal->threadsPerProcess, 1); // 8 cores / 8 local ranks
        auto gpu = merge({{"multi_gpu", "true"}, {"num_processes", "2"}}, std::nullopt, 2);
        QVERIFY(gpu);
        QCOMPARE(gpu->threadsPerProcess, 1);
    }

    void portAndRestarts()
    {
        auto settings =
            merge({{"main_process_port", "0"}, {"max_restarts", "2"}, {"cpu", "true"}, {"num_processes", "2"}});
        QVERIFY(settings);
        QCOMPARE(settings->mainProcessPort, 0);
        QVERIFY(settings->mainProcessPortExplicit);
        QCOMPARE(settings->maxRestarts, 2);
        QVERIFY(!merge({{"main_process_port", "70000"}}));
        QVERIFY(!merge(
            {{"main_process_port", "0"}, {"num_machines", "2"}, {"num_processes", "2"}, {"main_process_ip", "h"}}));
        auto fallback = merge({});
        QVERIFY(fallback);
        QCOMPARE(fallback->mainProcessPort, 29500);
        QVERIFY(!fallback->mainProcessPortExplicit);
    }

    void parallelismNeedsFsdp2()
    {
        QVERIFY(!merge({{"use_parallelism_config", "true"}, {"use_fsdp", "true"}, {"num_processes", "2"}}, std::nullopt,
                       2));
        auto ok = merge(
            {{"use_parallelism_config", "true"}, {"use_fsdp", "true"}, {"fsdp_version", "2"}, {"num_processes", "2"}},
            std::nullopt, 2);
        QVERIFY(ok);
        QVERIFY(ok->useParallelismConfig);
        QVERIFY(!merge({{"use_fsdp", "true"}, {"num_processes", "2"}, {"fsdp_sync_module_states", "false"}},
                       std::nullopt, 2));
    }

    // Regression: --gradient_accumulation_steps without DeepSpeed was ignored without a word.
    void ignoredGradientAccumulationIsNoted()
    {
        auto plain = merge({{"cpu", "true"}, {"gradient_accumulation_steps", "4"}});
        QVERIFY(plain);
        QVERIFY(hasNote(*plain, "--gradient_accumulation_steps is ignored without DeepSpeed"));
        auto deepspeed = merge({{"use_deepspeed", "true"}, {"gradient_accumulation_steps", "4"}}, std::nullopt, 1);
        QVERIFY(deepspeed);
        QVERIFY(!hasNote(*deepspeed, "--gradient_accumulation_steps is ignored"));
        QVERIFY(!merge({{"use_deepspeed", "true"}, {"gradient_accumulation_steps", "four"}}, std::nullopt, 1));
    }

    // Regression: --multi_gpu on a machine without GPUs gave no note.
    void multiGpuWithoutGpusIsNoted()
    {
        auto none = merge({{"multi_gpu", "true"}, {"num_processes", "2"}});
        QVERIFY(none);
        QVERIFY(hasNote(*none, "--multi_gpu: no GPU was found on this machine"));
        auto two = merge({{"multi_gpu", "true"}, {"num_processes", "2"}}, std::nullopt, 2);
        QVERIFY(two);
        QVERIFY(!hasNote(*two, "no GPU was found"));
        ConfigView view;
        view.top["distributed_type"] = cfg("MULTI_GPU");
        view.top["num_processes"] = cfg("2");
        auto fromConfig = merge({}, view);
        QVERIFY(fromConfig);
        QVERIFY(hasNote(*fromConfig, "distributed_type MULTI_GPU: no GPU was found on this machine"));
    }

    // Regression: Accelerate 1.0's --use_xpu, --ipex and --mpirun_ccl were unknown flags.
    void acceleratorOneFlagsAccepted()
    {
        auto settings = merge({{"cpu", "true"}, {"ipex", "true"}, {"use_xpu", "true"}, {"mpirun_ccl", "2"}});
        QVERIFY(settings);
        QVERIFY(hasNote(*settings, "--ipex (Accelerate 1.0) is accepted and ignored"));
        QVERIFY(hasNote(*settings, "--use_xpu (Accelerate 1.0) is accepted and ignored"));
        QVERIFY(hasNote(*settings, "--mpirun_ccl (Accelerate 1.0) is accepted and ignored"));
        QVERIFY(isRetiredFlag("ipex"));
        QVERIFY(!isRetiredFlag("cpu"));
    }

    // Typed values are checked and stored the way Accelerate's parser types them.
    void typedValuesFollowPythonTypes()
    {
        auto settings = merge({{"use_fsdp", "true"},
                               {"num_processes", "2"},
                               {"fsdp_min_num_params", "0100"},
                               {"fp8_pad_inner_dim", "off"},
                               {"fp8_override_linear_precision", "false,YES,0"}},
                              std::nullopt, 2);
        QVERIFY(settings);
        QCOMPARE(settings->args["fsdp_min_num_params"].text, std::string("100"));
        QCOMPARE(settings->args["fp8_pad_inner_dim"].text, std::string("0"));
        QCOMPARE(settings->args["fp8_override_linear_precision"].text, std::string("0,1,0"));
        auto bad = merge({{"fp8_pad_inner_dim", "maybe"}});
        QVERIFY(!bad);
        QCOMPARE(
            QString::fromStdString(bad.error().toString()),
            QStringLiteral("--fp8_pad_inner_dim: expected true/false, yes/no, on/off, t/f, y/n or 1/0; got 'maybe'"));
        QVERIFY(!merge({{"fp8_override_linear_precision", "true,maybe,false"}}));
        QVERIFY(!merge({{"megatron_lm_hidden_dropout", "x"}}));
    }

    // Regression: the busy-port message pasted the other process's command line with its newlines.
    void busyPortMessageHasNoRawNewlines()
    {
        QProcess holder;
        holder.start(QStringLiteral("python3"),
                     {QStringLiteral("-c"), QStringLiteral("import socket, sys\n"
                                                           "s = socket.socket()\n"
                                                           "s.bind(('127.0.0.1', 0))\n"
                                                           "s.listen()\n"
                                                           "print(s.getsockname()[1], flush=True)\n"
                                                           "sys.stdin.read()\n")});
        QVERIFY(holder.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(holder.canReadLine(), 10000);
        const int port = holder.readLine().trimmed().toInt();
        QVERIFY(port > 0);
        const std::string message = describeBusyPort(port);
        holder.closeWriteChannel();
        QVERIFY(holder.waitForFinished(10000));
        QVERIFY2(message.find('\n') == std::string::npos, message.c_str());
        QVERIFY2(message.find("by pid") != std::string::npos, message.c_str());
        QVERIFY2(message.find("import socket, sys\\ns = socket.socket()") != std::string::npos, message.c_str());
    }
};

QTEST_GUILESS_MAIN(tst_LaunchMerge)
#include "tst_launchmerge.moc"
