(import_declaration [(identifier) (scoped_identifier)] @import.path) @import
