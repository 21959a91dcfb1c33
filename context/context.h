/*
 * context.h — repository context: syntax trees, the workspace index,
 * retrieval, prompt assembly, infill planning and shaping.
 *
 * context/ knows no protocol: the LSP daemon, the CLI and batch mode all use
 * it unchanged. It depends on model/ only for the tokenizer (token budgets).
 * Its functions arrive with the context issue; the module exists now so that
 * the build and the dependency order are fixed from the start.
 */
#ifndef SCULPT_CONTEXT_H
#define SCULPT_CONTEXT_H

#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Maps an LSP languageId or a file name's extension to sculpt's language
 * name ("c", "cpp", "python", ...). Returns NULL when the language is not
 * one sculpt knows. The result is a static string. */
const char *sc_context_language_for(const char *language_id, const char *path);

#ifdef __cplusplus
}
#endif
#endif
