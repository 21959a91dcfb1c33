(import_spec path: (interpreted_string_literal) @import.path) @import
