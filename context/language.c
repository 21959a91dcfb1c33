/* language.c — which of sculpt's languages a document is in. */
#define _POSIX_C_SOURCE 200809L
#include "context.h"

#include <string.h>
#include <strings.h>

/* LSP languageId values as VS Code, Neovim and eglot send them. */
static const struct { const char *id; const char *lang; } k_language_ids[] = {
    {"c", "c"},
    {"cpp", "cpp"},           {"cuda-cpp", "cpp"},     {"objective-cpp", "cpp"},
    {"python", "python"},
    {"javascript", "javascript"}, {"javascriptreact", "javascript"},
    {"typescript", "typescript"}, {"typescriptreact", "tsx"},
    {"go", "go"},
    {"rust", "rust"},
    {"java", "java"},
    {"shellscript", "bash"},  {"sh", "bash"},  {"bash", "bash"},
    {"json", "json"},         {"jsonc", "json"},
};

static const struct { const char *ext; const char *lang; } k_extensions[] = {
    {"c", "c"},       {"h", "c"},
    {"cc", "cpp"},    {"cpp", "cpp"},   {"cxx", "cpp"}, {"hpp", "cpp"},
    {"hh", "cpp"},    {"hxx", "cpp"},   {"cu", "cpp"},  {"cuh", "cpp"},
    {"py", "python"}, {"pyi", "python"},
    {"js", "javascript"}, {"mjs", "javascript"}, {"cjs", "javascript"},
    {"jsx", "javascript"},
    {"ts", "typescript"}, {"mts", "typescript"}, {"cts", "typescript"},
    {"tsx", "tsx"},
    {"go", "go"},
    {"rs", "rust"},
    {"java", "java"},
    {"sh", "bash"},   {"bash", "bash"},
    {"json", "json"},
};

const char *sc_context_language_for(const char *language_id, const char *path) {
  if (language_id && *language_id) {
    for (size_t i = 0; i < sizeof k_language_ids / sizeof k_language_ids[0]; i++)
      if (strcmp(language_id, k_language_ids[i].id) == 0) return k_language_ids[i].lang;
  }
  if (path) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    if (dot && dot != base) {
      for (size_t i = 0; i < sizeof k_extensions / sizeof k_extensions[0]; i++)
        if (strcasecmp(dot + 1, k_extensions[i].ext) == 0) return k_extensions[i].lang;
    }
  }
  return NULL;
}
