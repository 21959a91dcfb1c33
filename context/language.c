/* language.c — which of sculpt's languages a document is in. */
#define _POSIX_C_SOURCE 200809L
#include "context.h"
#include "syntax_impl.h"

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

/* ---- grammars ---------------------------------------------------------------
 * The entry points the generated parsers export (grammars/CMakeLists.txt
 * compiles them into sc_grammars). */
const TSLanguage *tree_sitter_c(void);
const TSLanguage *tree_sitter_cpp(void);
const TSLanguage *tree_sitter_python(void);
const TSLanguage *tree_sitter_javascript(void);
const TSLanguage *tree_sitter_typescript(void);
const TSLanguage *tree_sitter_tsx(void);
const TSLanguage *tree_sitter_go(void);
const TSLanguage *tree_sitter_rust(void);
const TSLanguage *tree_sitter_java(void);
const TSLanguage *tree_sitter_bash(void);
const TSLanguage *tree_sitter_json(void);

static const struct { const char *lang; const TSLanguage *(*fn)(void); } k_grammars[] = {
    {"c", tree_sitter_c},           {"cpp", tree_sitter_cpp},
    {"python", tree_sitter_python}, {"javascript", tree_sitter_javascript},
    {"typescript", tree_sitter_typescript}, {"tsx", tree_sitter_tsx},
    {"go", tree_sitter_go},         {"rust", tree_sitter_rust},
    {"java", tree_sitter_java},     {"bash", tree_sitter_bash},
    {"json", tree_sitter_json},
};

const TSLanguage *sc_context_ts_language(const char *lang) {
  if (!lang) return NULL;
  for (size_t i = 0; i < sizeof k_grammars / sizeof k_grammars[0]; i++)
    if (strcmp(lang, k_grammars[i].lang) == 0) return k_grammars[i].fn();
  return NULL;
}

const char *sc_syntax__language_name(const char *lang) {
  if (!lang) return NULL;
  for (size_t i = 0; i < sizeof k_grammars / sizeof k_grammars[0]; i++)
    if (strcmp(lang, k_grammars[i].lang) == 0) return k_grammars[i].lang;
  return NULL;
}
