// accel config (no sub-command): the questionnaire of `accelerate config` in the terminal, driven
// by the shared question flow. Answers are read line by line from stdin, so scripts can pipe them
// in: menus take the choice number or its text, an empty line takes the default, an invalid
// answer is asked again (and ends the questionnaire with exit 2 once input has run out).
#include "app/cli/argparser.h"
#include "app/cli/command.h"

#include "core/config/configio.h"
#include "core/config/questionflow.h"
#include "core/config/validation.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

namespace accel::cli {

std::string configSubCommandsHelp();

namespace {

using namespace accel::config;

void ask(const Question &question, const Answers &answers)
{
    std::string text = question.promptFor(answers);
    if (question.kind == QuestionKind::Menu) {
        std::printf("%s\n", text.c_str());
        for (size_t i = 0; i < question.choices.size(); ++i)
            std::printf("  %zu) %s\n", i + 1, question.choices[i].label.c_str());
        text.clear();
    }
    const std::string hint = question.defaultHint();
    std::printf("%s%s%s: ", text.c_str(), text.empty() || hint.empty() ? "" : " ", hint.c_str());
    std::fflush(stdout);
}

} // namespace

int runConfigQuestionnaire(int argc, char **argv)
{
    ArgParser parser("accel config",
                     "Answer the questions of `accelerate config` and write the config file (YAML, or JSON for a "
                     ".json path). Answers are read line by line from stdin.");
    parser.addValue("config_file", "PATH", "where to write the config", defaultConfigPath());
    parser.setEpilog(configSubCommandsHelp());
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return ExitOk;
        }
        std::fprintf(stderr, "accel config: %s\n", parser.error().c_str());
        return ExitBadInput;
    }
    const std::string path = parser.valueOr("config_file", defaultConfigPath());
    const QuestionFlow &flow = QuestionFlow::standard();
    Answers answers;
    bool inputEnded = false;
    while (const Question *question = flow.next(answers)) {
        for (;;) {
            ask(*question, answers);
            std::string line;
            if (!inputEnded && !std::getline(std::cin, line))
                inputEnded = true;
            if (inputEnded)
                line.clear();
            if (!isatty(STDIN_FILENO))
                std::printf("%s\n", line.c_str()); // echo piped answers so the transcript reads like a session
            Result<std::string> answer = flow.interpret(*question, line, answers);
            if (answer) {
                answers[question->id] = *answer;
                break;
            }
            std::printf("%s\n", answer.error().message.c_str());
            if (inputEnded) {
                std::fprintf(stderr, "accel config: input ended before '%s' was answered (%s)\n", question->id.c_str(),
                             answer.error().message.c_str());
                return ExitBadInput;
            }
        }
    }
    Result<ClusterConfig> config = flow.build(answers);
    if (!config) {
        std::fprintf(stderr, "accel config: %s\n", config.error().toString().c_str());
        return ExitBadInput;
    }
    for (const Diagnostic &d : validate(*config))
        std::fprintf(stderr, "%s%s\n", d.severity == Severity::Error ? "error: " : "note: ", d.toString().c_str());
    if (auto saved = saveConfigFile(*config, path); !saved) {
        std::fprintf(stderr, "accel config: %s\n", saved.error().toString().c_str());
        return exitCodeFor(saved.error());
    }
    std::printf("accel configuration saved at %s\n", path.c_str());
    return ExitOk;
}

} // namespace accel::cli
