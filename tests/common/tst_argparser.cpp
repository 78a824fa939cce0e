#include "app/cli/argparser.h"

#include <QtTest>

using accel::cli::ArgParser;

class tst_ArgParser : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void bothSpellingsAndInlineValues()
    {
        ArgParser parser("accel launch", "Launch.");
        parser.addValue("num_processes", "N", "processes");
        parser.addValue("config_file", "FILE", "config");
        parser.addFlag("multi_gpu", "multi gpu");
        QVERIFY(parser.parse({"--num-processes", "4", "--config_file=a.yaml", "--multi-gpu"}));
        QCOMPARE(parser.valueOr("num_processes", ""), std::string("4"));
        QCOMPARE(parser.valueOr("config-file", ""), std::string("a.yaml"));
        QVERIFY(parser.isSet("multi_gpu"));
        QVERIFY(!parser.isSet("missing"));
    }

    void restPositionalPassesScriptArgumentsThrough()
    {
        ArgParser parser("accel launch", "Launch.");
        parser.addValue("num_processes", "N", "processes");
        parser.addPositional({"training_script", "script", false, true});
        QVERIFY(parser.parse({"--num_processes", "2", "train.py", "--num_processes", "7", "--help"}));
        const std::vector<std::string> expected{"train.py", "--num_processes", "7", "--help"};
        QCOMPARE(parser.positional("training_script"), expected);
        QCOMPARE(parser.valueOr("num_processes", ""), std::string("2"));
    }

    void unknownOptionSuggestsClosest()
    {
        ArgParser parser("accel config", "Config.");
        parser.addValue("mixed_precision", "MODE", "precision");
        QVERIFY(!parser.parse({"--mixed-precison", "bf16"}));
        QCOMPARE(parser.error(), std::string("unknown option '--mixed-precison' (did you mean '--mixed_precision'?)"));
    }

    void choicesAreEnforced()
    {
        ArgParser parser("accel config default", "Default.");
        accel::cli::OptionSpec spec;
        spec.name = "mixed_precision";
        spec.valueName = "MODE";
        spec.choices = {"no", "fp16", "bf16"};
        parser.addOption(spec);
        QVERIFY(!parser.parse({"--mixed_precision", "fp32"}));
        QCOMPARE(parser.error(), std::string("option '--mixed_precision': 'fp32' is not one of no, fp16, bf16"));
        QVERIFY(parser.parse({"--mixed_precision", "bf16"}));
    }

    void helpAndMissingValues()
    {
        ArgParser parser("accel x", "Does x.");
        parser.addValue("port", "PORT", "the port", "29500");
        parser.addPositional({"FILE", "input", false, false});
        QVERIFY(!parser.parse({"--help"}));
        QVERIFY(parser.helpRequested());
        QVERIFY(parser.helpText().find("--port PORT") != std::string::npos);
        QVERIFY(parser.helpText().find("(default: 29500)") != std::string::npos);
        QVERIFY(!parser.parse({"f", "--port"}));
        QCOMPARE(parser.error(), std::string("option '--port' needs a value (PORT)"));
        QVERIFY(!parser.parse({}));
        QCOMPARE(parser.error(), std::string("missing argument FILE"));
        QVERIFY(!parser.parse({"a", "b"}));
        QCOMPARE(parser.error(), std::string("unexpected argument 'b'"));
    }

    void negativeNumbersAreValues()
    {
        ArgParser parser("accel x", "x");
        parser.addValue("num_processes", "N", "n");
        QVERIFY(parser.parse({"--num_processes", "-1"}));
        QCOMPARE(parser.valueOr("num_processes", ""), std::string("-1"));
    }

    void multiValueOptionsExpandUntilARejectedItem()
    {
        std::vector<std::string> storage{"estimate-memory", "--dtypes", "float32", "int8,int4", "model-dir", "--json"};
        std::vector<char *> argv;
        for (std::string &s : storage)
            argv.push_back(s.data());
        const auto known = [](const std::string &x) { return x == "float32" || x == "int8" || x == "int4"; };
        const std::vector<std::string> expected{"--dtypes", "float32", "--dtypes",  "int8",
                                                "--dtypes", "int4",    "model-dir", "--json"};
        QCOMPARE(accel::cli::expandMultiValueOption(int(argv.size()), argv.data(), "dtypes", known, false), expected);

        // A first value that is rejected is passed on only when asked, so the parser can name it.
        storage = {"estimate-memory", "--dtypes", "float99", "model-dir"};
        argv.clear();
        for (std::string &s : storage)
            argv.push_back(s.data());
        const std::vector<std::string> passed{"--dtypes", "float99", "model-dir"};
        QCOMPARE(accel::cli::expandMultiValueOption(int(argv.size()), argv.data(), "dtypes", known, true), passed);
        const std::vector<std::string> kept{"--dtypes", "float99", "model-dir"};
        QCOMPARE(accel::cli::expandMultiValueOption(int(argv.size()), argv.data(), "dtypes", known, false), kept);
    }
};

QTEST_GUILESS_MAIN(tst_ArgParser)
#include "tst_argparser.moc"
