// `auxstore`: the command-line tool (tools/cli/ holds everything it does).
#include <iostream>

#include "tools/cli/commands.h"

int main(int argc, char** argv) { return auxstore::cli::RunCli(argc, argv, std::cout, std::cerr); }
