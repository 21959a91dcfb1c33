(preproc_include path: [(string_literal) (system_lib_string)] @import.path) @import
