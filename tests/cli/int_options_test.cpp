// Every integer option of every subcommand is read by the one decimal check (decision 0055).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/int_option.h"

namespace gs::cli {
namespace {

// The application as main() builds it.
struct Cli {
  CLI::App app{"gemmaserve"};
  std::vector<CommandEntry> commands;
  Cli() {
    app.require_subcommand(1);
    commands = {register_serve(app),   register_run(app),   register_bench(app),
                register_inspect(app), register_synth(app), register_tokenize(app)};
  }
};

struct IntOption {
  std::string command;
  std::string name;  // --long (or -s)
};

// The options that CLI11 converts to an integer (its type name INT or UINT, optionals too).
std::vector<IntOption> integer_options() {
  Cli cli;
  std::vector<IntOption> out;
  for (const CommandEntry& entry : cli.commands) {
    for (const CLI::Option* opt : entry.first->get_options()) {
      const std::string type = opt->get_type_name();
      const std::string base = type.substr(0, type.find(':'));
      if (base != "INT" && base != "UINT") continue;
      out.push_back({entry.first->get_name(), opt->get_name()});
    }
  }
  return out;
}

// Parses `command name value` on a fresh application: the error CLI11 gives ("" when none
// other than a missing required option), and the option's value as CLI11 converts it.
std::string parse(const IntOption& o, const std::string& value, int64_t* converted) {
  Cli cli;
  try {
    cli.app.parse(o.command + " " + o.name + " " + value);
  } catch (const CLI::RequiredError&) {  // a required option (-m) left out: the value was read
  } catch (const CLI::RequiresError&) {  // bench --draft-max without --mtp: the value was read
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  const CLI::App* sub = cli.app.get_subcommand(o.command);
  const CLI::Option* opt = sub->get_option(o.name);
  *converted = opt->as<int64_t>();
  return "";
}

TEST(IntOptions, EveryIntegerOptionIsCheckedAsDecimal) {
  const std::vector<IntOption> options = integer_options();
  // serve, run, bench, inspect and synth hold 39 of them (a change of CLI11's type names
  // would leave this list empty and the test proving nothing).
  ASSERT_GE(options.size(), 35u);
  for (const IntOption& o : options) {
    Cli cli;
    CLI::Option* opt = cli.app.get_subcommand(o.command)->get_option(o.name);
    bool checked = false;
    try {
      // Attached with transform(): check() makes a validator's rewrite of the text void, and
      // CLI11 then read "010" as 8 after the check had passed it as ten.
      checked = opt->get_validator(kDecimalIntegerCheck)->get_modifying();
    } catch (const CLI::OptionNotFound&) {
    }
    EXPECT_TRUE(checked) << o.command << " " << o.name << " is not read by ->transform(decimal_integer(...))";
  }
}

// CLI11 read "010" as 8 and "0x10" as 16: a leading zero is decimal, a base prefix, a '+',
// a fraction and an exponent are refused naming the option.
TEST(IntOptions, LeadingZerosAreDecimalAndOtherFormsAreRefusedNamingTheOption) {
  for (const IntOption& o : integer_options()) {
    for (const char* bad : {"0x10", "+5", "1.5", "1e3", "0b1", "' 5'", "010x"}) {
      int64_t v = 0;
      const std::string error = parse(o, bad, &v);
      EXPECT_NE(error.find(o.name), std::string::npos) << o.command << " " << o.name << " " << bad << ": " << error;
      EXPECT_NE(error.find("is not a decimal integer"), std::string::npos)
          << o.command << " " << o.name << " " << bad << ": [" << error << "]";
    }
    int64_t v = 0;
    const std::string error = parse(o, "010", &v);
    if (error.empty()) {
      EXPECT_EQ(v, 10) << o.command << " " << o.name << " 010";
    } else {  // ten is outside the option's range: the message says ten
      EXPECT_NE(error.find("010 is outside"), std::string::npos) << o.command << " " << o.name << ": " << error;
    }
  }
}

TEST(IntOptions, TheCheckKeepsEachTypesRange) {
  std::string s = "18446744073709551615";
  EXPECT_EQ(decimal_integer<uint64_t>()(s), "");
  EXPECT_EQ(s, "18446744073709551615");
  s = "18446744073709551616";
  EXPECT_NE(decimal_integer<uint64_t>()(s), "");
  s = "-1";
  EXPECT_NE(decimal_integer<uint64_t>()(s).find("outside"), std::string::npos);
  s = "-0010";
  EXPECT_EQ(decimal_integer<int>(-20, 20)(s), "");
  EXPECT_EQ(s, "-10");
  s = "21";
  EXPECT_EQ(decimal_integer<int>(-20, 20)(s), "21 is outside [-20, 20]");
  s = "";
  EXPECT_NE(decimal_integer<int>()(s).find("is not a decimal integer"), std::string::npos);
  s = "-";
  EXPECT_NE(decimal_integer<int>()(s).find("is not a decimal integer"), std::string::npos);
}

// --api-key-file skips blank lines and '#' comments (ApiKeys::from_file); its --help says so.
TEST(ServeHelp, TheKeyFileOptionSaysCommentsAndBlankLinesAreSkipped) {
  Cli cli;
  const std::string help = cli.app.get_subcommand("serve")->get_option("--api-key-file")->get_description();
  EXPECT_NE(help.find("blank lines and lines starting with # are skipped"), std::string::npos) << help;
}

}  // namespace
}  // namespace gs::cli
