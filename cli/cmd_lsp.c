#include "cli.h"
int sc_cli_lsp(int argc, char **argv) { sc_cli_fail("lsp", "not yet"); return 2; }
