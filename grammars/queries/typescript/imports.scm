(import_statement source: (string) @import.path) @import
(import_statement (import_require_clause source: (string) @import.path)) @import
(call_expression
  function: (identifier) @_require (#eq? @_require "require")
  arguments: (arguments . (string) @import.path)) @import
