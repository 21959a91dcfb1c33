(import_statement name: [(dotted_name) (aliased_import name: (dotted_name))] @import.path) @import
(import_from_statement module_name: [(dotted_name) (relative_import)] @import.path) @import
(future_import_statement) @import
(import_from_statement module_name: [(dotted_name) (relative_import)] @import.path
  name: [(dotted_name) @import.name (aliased_import name: (dotted_name) @import.name)]) @import
