/* cmd_tokenize.c — `sculpt tokenize`. Pending: its model/ work has not landed yet,
 * so it says so plainly and exits 2. */
#include "cli.h"

int sc_cli_tokenize(int argc, char **argv) {
  sc_cli_fail("tokenize", "not available in this build yet");
  return 2;
}
