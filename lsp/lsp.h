/* lsp.h — placeholder until the daemon lands in this change. */
#ifndef SCULPT_LSP_H
#define SCULPT_LSP_H
#endif
