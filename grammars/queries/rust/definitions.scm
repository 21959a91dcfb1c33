; Rust: free functions, methods (functions inside impl or trait bodies),
; structs, enums, unions, traits, impls, type aliases, modules.
(impl_item
  body: (declaration_list (function_item name: (identifier) @name) @definition.method))
(trait_item
  body: (declaration_list
    [(function_item name: (identifier) @name)
     (function_signature_item name: (identifier) @name)] @definition.method))
(source_file (function_item name: (identifier) @name) @definition.function)
(mod_item
  body: (declaration_list (function_item name: (identifier) @name) @definition.function))
(block (function_item name: (identifier) @name) @definition.function)
[(struct_item name: (type_identifier) @name)
 (union_item name: (type_identifier) @name)
 (trait_item name: (type_identifier) @name)] @definition.class
[(enum_item name: (type_identifier) @name)
 (type_item name: (type_identifier) @name)] @definition.type
(impl_item type: (_) @name) @definition.class
(mod_item name: (identifier) @name) @definition.module
