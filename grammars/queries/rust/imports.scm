(use_declaration argument: (_) @import.path) @import
(extern_crate_declaration name: (identifier) @import.path) @import
(mod_item name: (identifier) @import.path !body) @import
