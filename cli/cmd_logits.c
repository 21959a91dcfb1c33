/* cmd_logits.c — `sculpt logits`. Pending: its model/ work has not landed yet,
 * so it says so plainly and exits 2. */
#include "cli.h"

int sc_cli_logits(int argc, char **argv) {
  sc_cli_fail("logits", "not available in this build yet");
  return 2;
}
