/* cmd_model.c — `sculpt model`. Pending: its model/ work has not landed yet,
 * so it says so plainly and exits 2. */
#include "cli.h"

int sc_cli_model(int argc, char **argv) {
  sc_cli_fail("model", "not available in this build yet");
  return 2;
}
