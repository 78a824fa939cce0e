// The question flow of `accelerate config`, driven in-process exactly like the terminal
// questionnaire does (next question, typed input, interpret, re-ask): scripted answers must
// produce the files in the corpus, which were written from Accelerate's own questionnaire.
#include "core/common/fileutil.h"
#include "core/config/configio.h"
#include "core/config/questionflow.h"

#include <QtTest>

using namespace accel;
using namespace accel::config;

namespace {

struct Session {
    Answers answers;
    QStringList asked;    // question ids in the order asked
    QStringList rejected; // messages of re-asked questions
    size_t consumed = 0;
};

// Feeds `inputs` one per question; runs out -> empty input (the default).
Session run(const std::vector<std::string> &inputs)
{
    const QuestionFlow &flow = QuestionFlow::standard();
    Session s;
    while (const Question *question = flow.next(s.answers)) {
        s.asked << QString::fromStdString(question->id);
        for (int attempt = 0; attempt < 5; ++attempt) {
            const std::string input = s.consumed < inputs.size() ? inputs[s.consumed++] : std::string();
            auto answer = flow.interpret(*question, input, s.answers);
            if (answer) {
                s.answers[question->id] = *answer;
                break;
            }
            s.rejected << QString::fromStdString(answer.error().message);
        }
        if (!s.answers.count(question->id))
            break;
    }
    return s;
}

QString corpus(const char *name)
{
    auto text = fileutil::readFile(std::string(ACCEL_CONFIG_CORPUS) + "/" + name);
    return text ? QString::fromStdString(*text) : QString();
}

QString yamlOf(const Session &s)
{
    auto config = QuestionFlow::standard().build(s.answers);
    if (!config)
        return QString::fromStdString("build failed: " + config.error().toString());
    return QString::fromStdString(serializeConfig(*config, ConfigFormat::Yaml));
}

} // namespace

class tst_QuestionFlow : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The studio's wizard shows one page per section, in order: every question belongs to a listed
    // section and only depends on answers of its own or earlier sections.
    void sectionsOrderTheWizardsPages()
    {
        const QuestionFlow &flow = QuestionFlow::standard();
        std::map<std::string, size_t> order;
        for (size_t i = 0; i < flow.sections().size(); ++i)
            order[flow.sections()[i].id] = i;
        QCOMPARE(order.size(), size_t(11));
        for (const Question &question : flow.questions())
            QVERIFY2(order.count(question.section), question.id.c_str());
        QCOMPARE(flow.find("main_process_ip")->section, std::string("multi_node"));
        QCOMPARE(flow.find("fp8_amax_history_length")->section, std::string("fp8"));
        QCOMPARE(flow.questionsIn("fsdp").front()->id, std::string("use_fsdp"));

        const std::vector<Answers> samples = {
            {},
            {{"machine_type", "MULTI_GPU"},
             {"num_machines", "2"},
             {"use_deepspeed", "yes"},
             {"zero_stage", "3"},
             {"offload_optimizer_device", "nvme"},
             {"deepspeed_multinode_launcher", "pdsh"},
             {"mixed_precision", "fp8"},
             {"fp8_backend", "TE"},
             {"fp8_override_linear_precision", "yes"}},
            {{"machine_type", "MULTI_GPU"},
             {"use_fsdp", "yes"},
             {"fsdp_version", "2"},
             {"use_parallelism_config", "yes"},
             {"parallelism_config_cp_size", "2"},
             {"same_network", "no"},
             {"num_machines", "3"}},
            {{"machine_type", "MULTI_GPU"},
             {"use_megatron_lm", "yes"},
             {"megatron_lm_tp_degree", "2"},
             {"megatron_lm_pp_degree", "2"},
             {"use_dynamo", "yes"},
             {"dynamo_customize", "yes"}},
            {{"machine_type", "MULTI_CPU"}, {"use_mpirun", "yes"}, {"mixed_precision", "bf16"}},
            {{"machine_type", "XLA"}, {"tpu_use_cluster", "yes"}, {"tpu_use_command_file", "yes"}},
            {{"compute_environment", "AMAZON_SAGEMAKER"},
             {"sagemaker_distributed_type", "DATA_PARALLEL"},
             {"use_dynamo", "yes"}},
        };
        for (const Answers &sample : samples) {
            const Answers all = flow.effective(sample);
            for (const Question &question : flow.questions()) {
                if (!question.condition)
                    continue;
                Answers earlier;
                for (const auto &[id, answer] : all)
                    if (order[flow.find(id)->section] <= order[question.section])
                        earlier[id] = answer;
                QVERIFY2(question.condition(all) == question.condition(earlier), question.id.c_str());
            }
        }
    }

    void seedAnswersFromARecommendation()
    {
        ClusterConfig recommended;
        recommended.distributedType = DistributedType::MultiGpu;
        recommended.numProcesses = 4;
        recommended.gpuIds = "all";
        recommended.mixedPrecision = MixedPrecision::Bf16;
        const Answers seed = QuestionFlow::standard().seedAnswers(recommended);
        QCOMPARE(seed, (Answers{{"gpu_ids", "all"},
                                {"machine_type", "MULTI_GPU"},
                                {"mixed_precision", "bf16"},
                                {"num_processes", "4"}}));
        auto built = QuestionFlow::standard().build(seed);
        QVERIFY(built.has_value());
        QCOMPARE(built->distributedType, DistributedType::MultiGpu);
        QCOMPARE(*built->numProcesses, std::int64_t(4));
    }

    void flowsProduceAccelerateFiles_data()
    {
        QTest::addColumn<QStringList>("inputs");
        QTest::addColumn<QString>("expectedFile");
        QTest::newRow("single CPU") << QStringList{"", "1", "yes", "", "no"} << "single_cpu.yaml";
        QTest::newRow("multi-CPU") << QStringList{"", "multi-CPU", "", "", "", "", "4", ""} << "multi_cpu.yaml";
        QTest::newRow("multi-CPU mpirun")
            << QStringList{"", "MULTI_CPU", "", "", "yes", "/home/user/hostfile", "", "8", ""}
            << "multi_cpu_mpirun.yaml";
        QTest::newRow("multi-GPU multi-node")
            << QStringList{"1", "5", "2", "0", "10.0.0.1", "29500", "", "", "", "", "", "", "16", "", "", "bf16"}
            << "multi_gpu_multinode.yaml";
        QTest::newRow("multi-GPU ids") << QStringList{"", "multi-gpu", "", "", "", "", "", "", "3", "0,1,3", "", "fp16"}
                                       << "multi_gpu_ids.yaml";
        QTest::newRow("single GPU") << QStringList{"", "", "", "", "", "", "", "fp16"} << "single_gpu.yaml";
        QTest::newRow("FSDP2") << QStringList{"", "multi-GPU", "",    "", "", "",    "yes", "",  "",
                                              "", "",          "yes", "", "", "yes", "",    "8", "bf16"}
                               << "fsdp2.yaml";
        QTest::newRow("FSDP1") << QStringList{"",
                                              "multi-GPU",
                                              "",
                                              "",
                                              "",
                                              "",
                                              "yes",
                                              "1",
                                              "SHARD_GRAD_OP",
                                              "",
                                              "",
                                              "no",
                                              "LlamaDecoderLayer",
                                              "",
                                              "SHARDED_STATE_DICT",
                                              "",
                                              "",
                                              "",
                                              "",
                                              "4",
                                              "bf16"}
                               << "fsdp1.yaml";
        QTest::newRow("DeepSpeed json file")
            << QStringList{"", "multi-GPU", "", "", "", "yes", "yes", "/home/user/ds_config.json", "yes", "", "2"}
            << "deepspeed_json_file.yaml";
        QTest::newRow("DeepSpeed ZeRO-2")
            << QStringList{"", "multi-GPU", "", "", "", "yes", "", "", "cpu", "", "4", "yes", "", "", "", "2", "fp16"}
            << "deepspeed_zero2.yaml";
        QTest::newRow("fp8 TE") << QStringList{"", "multi-GPU", "",   "", "", "", "", "", "2", "",
                                               "", "fp8",       "te", "", "", "", "", "", "",  ""}
                                << "fp8_te.yaml";
        QTest::newRow("fp8 MS-AMP") << QStringList{"", "", "", "", "", "", "", "fp8", "3", ""} << "fp8_msamp.yaml";
        QTest::newRow("Megatron-LM") << QStringList{"", "multi-GPU", "",  "", "", "", "",  "yes", "2",
                                                    "", "2",         "2", "", "", "", "8", "bf16"}
                                     << "megatron_lm.yaml";
        QTest::newRow("dynamo") << QStringList{"", "multi-GPU", "", "", "yes", "eager", "", "", "", "", "2", "", "", ""}
                                << "multi_gpu_dynamo_default.yaml";
        QTest::newRow("SageMaker") << QStringList{"2",   "default", "", "accelerate_sagemaker_execution_role",
                                                  "",    "",        "", "2",
                                                  "",    "",        "", "2",
                                                  "fp16"}
                                   << "sagemaker.yaml";
    }

    void flowsProduceAccelerateFiles()
    {
        QFETCH(QStringList, inputs);
        QFETCH(QString, expectedFile);
        std::vector<std::string> script;
        for (const QString &input : inputs)
            script.push_back(input.toStdString());
        const Session s = run(script);
        QVERIFY2(s.rejected.isEmpty(), qPrintable(s.rejected.join(QLatin1Char('\n'))));
        QVERIFY2(s.consumed == script.size(), qPrintable(QStringLiteral("consumed %1 of %2 answers; asked %3")
                                                             .arg(s.consumed)
                                                             .arg(script.size())
                                                             .arg(s.asked.join(QLatin1Char(' ')))));
        QCOMPARE(s.asked.size(), inputs.size());
        QCOMPARE(yamlOf(s), corpus(qPrintable(expectedFile)));
    }

    void interpretMenusYesNoAndNumbers()
    {
        const QuestionFlow &flow = QuestionFlow::standard();
        const Question *machine = flow.find("machine_type");
        QVERIFY(machine);
        Answers none;
        QCOMPARE(*flow.interpret(*machine, "5", none), std::string("MULTI_GPU"));
        QCOMPARE(*flow.interpret(*machine, "  TPU ", none), std::string("XLA"));
        QCOMPARE(*flow.interpret(*machine, "multi_npu", none), std::string("MULTI_NPU"));
        QCOMPARE(*flow.interpret(*machine, "", none), std::string("NO"));
        auto outOfRange = flow.interpret(*machine, "12", none);
        QVERIFY(!outOfRange);
        QCOMPARE(
            QString::fromStdString(outOfRange.error().message),
            QStringLiteral(
                "expected a number from 1 to 11 or one of: No distributed training, multi-CPU, multi-XPU, multi-HPU, "
                "multi-GPU, multi-NPU, multi-MLU, multi-SDAA, multi-MUSA, multi-NEURON, TPU; got 12"));

        const Question *cpu = flow.find("use_cpu");
        QCOMPARE(*flow.interpret(*cpu, "Y", none), std::string("yes"));
        QCOMPARE(*flow.interpret(*cpu, "NO", none), std::string("no"));
        QCOMPARE(QString::fromStdString(flow.interpret(*cpu, "maybe", none).error().message),
                 QStringLiteral("please answer yes or no; got maybe"));
        QCOMPARE(QString::fromStdString(cpu->defaultHint()), QStringLiteral("[yes/NO]"));

        const Question *machines = flow.find("num_machines");
        QCOMPARE(QString::fromStdString(flow.interpret(*machines, "two", none).error().message),
                 QStringLiteral("expected a whole number; got two"));
        QCOMPARE(QString::fromStdString(flow.interpret(*machines, "0", none).error().message),
                 QStringLiteral("expected a whole number >= 1"));

        Answers twoMachines{
            {"compute_environment", "LOCAL_MACHINE"}, {"machine_type", "MULTI_GPU"}, {"num_machines", "2"}};
        const Question *rank = flow.find("machine_rank");
        QCOMPARE(QString::fromStdString(flow.interpret(*rank, "2", twoMachines).error().message),
                 QStringLiteral("expected a rank from 0 to 1"));
        const Question *ip = flow.find("main_process_ip");
        QCOMPARE(QString::fromStdString(flow.interpret(*ip, "", twoMachines).error().message),
                 QStringLiteral("an answer is required"));

        const Question *hostfile = flow.find("mpirun_hostfile");
        qputenv("HOME", "/home/tester");
        QCOMPARE(*flow.interpret(*hostfile, "", none), std::string("/home/tester/hostfile"));
    }

    void reAsksInvalidAnswers()
    {
        // "maybe" is refused, then "yes" accepted for the CPU question.
        const Session s = run({"", "", "maybe", "yes", "", "no"});
        QCOMPARE(s.rejected, QStringList{QStringLiteral("please answer yes or no; got maybe")});
        QCOMPARE(yamlOf(s), corpus("single_cpu.yaml"));
    }

    void multiGpuNeedsSeveralProcesses()
    {
        const Session s = run({"", "multi-GPU", "", "", "", "", "", "", "1", "2", "", "", "no"});
        QCOMPARE(s.rejected, QStringList{QStringLiteral(
                                 "a MULTI_GPU run on one machine needs more than one process; choose 'No distributed "
                                 "training' for one device")});
        // build() refuses the combination when answers come from elsewhere (the studio's wizard).
        Answers answers = s.answers;
        answers["num_processes"] = "1";
        auto config = QuestionFlow::standard().build(answers);
        QVERIFY(!config);
        QCOMPARE(QString::fromStdString(config.error().toString()),
                 QStringLiteral("num_processes: a MULTI_GPU run on one machine needs more than one process; choose 'No "
                                "distributed training' "
                                "for one device"));
    }

    void deepSpeedRefusedOnNeuron()
    {
        const Session s = run({"", "multi-NEURON", "", "", "", "yes", "no", "2"});
        QCOMPARE(s.consumed, size_t(8));
        QCOMPARE(s.rejected, QStringList{QStringLiteral("DeepSpeed is not supported on MULTI_NEURON")});
        QCOMPARE(s.answers.at("use_deepspeed"), std::string("no"));
    }

    void stateAfterGoingBack()
    {
        const QuestionFlow &flow = QuestionFlow::standard();
        Answers answers{{"compute_environment", "LOCAL_MACHINE"},
                        {"machine_type", "MULTI_GPU"},
                        {"num_machines", "2"},
                        {"machine_rank", "1"}};
        QCOMPARE(QString::fromStdString(flow.next(answers)->id), QStringLiteral("main_process_ip"));
        // The user goes back and picks one machine: the rank answer no longer applies.
        answers["num_machines"] = "1";
        const Answers kept = flow.prune(answers);
        QVERIFY(!kept.count("machine_rank"));
        QCOMPARE(QString::fromStdString(flow.next(answers)->id), QStringLiteral("debug"));
        QVERIFY(flow.applicable(answers).size() > 5);
        QCOMPARE(
            QString::fromStdString(flow.find("num_processes")->promptFor(answers)),
            QStringLiteral("How many GPU(s) should be used for distributed training (in total, over all machines)?"));
        answers["machine_type"] = "MULTI_CPU";
        QCOMPARE(QString::fromStdString(flow.find("num_processes")->promptFor(answers)),
                 QStringLiteral(
                     "How many processes should be used for distributed training (in total, over all machines)?"));
    }

    void everyConfigKeyExists()
    {
        // Each question's key must be one the writer knows (build() assigns through the schema).
        const QuestionFlow &flow = QuestionFlow::standard();
        QSet<QString> ids;
        for (const Question &question : flow.questions()) {
            QVERIFY2(!ids.contains(QString::fromStdString(question.id)), question.id.c_str());
            ids.insert(QString::fromStdString(question.id));
            if (question.kind == QuestionKind::Menu) {
                QVERIFY(!question.choices.empty());
                bool defaultListed = false;
                for (const Choice &choice : question.choices)
                    defaultListed = defaultListed || choice.value == question.defaultAnswer;
                QVERIFY2(defaultListed, question.id.c_str());
            }
        }
        // All defaults on a multi-GPU run with every optional block switched on builds without error.
        Answers answers{{"machine_type", "MULTI_GPU"},
                        {"use_fsdp", "yes"},
                        {"use_parallelism_config", "yes"},
                        {"mixed_precision", "fp8"},
                        {"fp8_backend", "TE"},
                        {"fp8_override_linear_precision", "yes"},
                        {"fp8_override_wgrad", "yes"},
                        {"fsdp_use_no_split_modules", "yes"},
                        {"num_processes", "4"},
                        {"use_dynamo", "yes"},
                        {"dynamo_customize", "yes"}};
        auto config = flow.build(answers);
        QVERIFY2(config.has_value(), config ? "" : config.error().toString().c_str());
        QCOMPARE(*config->fp8.overrideLinearPrecision, (std::vector<bool>{false, false, true}));
        QCOMPARE(*config->parallelism.tpSize, std::int64_t(1));
        QCOMPARE(*config->dynamo.mode, std::string("default"));
        QCOMPARE(config->distributedType, DistributedType::Fsdp);
    }

    void tpuPodFlow()
    {
        const Session s = run({"", "TPU", "8", "train", "yes", "my-tpu", "us-central1-a", "yes", "no",
                               "pip install x; echo hi", "vm-0, vm-1", "A=1,B=2"});
        QVERIFY2(s.rejected.isEmpty(), qPrintable(s.rejected.join(QLatin1Char('\n'))));
        auto config = QuestionFlow::standard().build(s.answers);
        QVERIFY(config.has_value());
        QCOMPARE(config->distributedType, DistributedType::Xla);
        QVERIFY(config->mixedPrecision == MixedPrecision::No);
        QCOMPARE(*config->commands, (std::vector<std::string>{"pip install x", "echo hi"}));
        QCOMPARE(*config->tpuVm, (std::vector<std::string>{"vm-0", "vm-1"}));
        QCOMPARE(*config->tpuEnv, (std::vector<std::string>{"A=1", "B=2"}));
        QCOMPARE(*config->mainTrainingFunction, std::string("train"));
        QCOMPARE(*config->numProcesses, std::int64_t(8));
    }
};

QTEST_GUILESS_MAIN(tst_QuestionFlow)
#include "tst_questionflow.moc"
