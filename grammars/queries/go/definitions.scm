; Go: functions, methods, named types (struct, interface and others).
(function_declaration name: (identifier) @name) @definition.function
(method_declaration name: (field_identifier) @name) @definition.method
(type_spec name: (type_identifier) @name type: [(struct_type) (interface_type)]) @definition.class
(type_spec name: (type_identifier) @name
  type: [(type_identifier) (qualified_type) (pointer_type) (array_type) (slice_type)
         (map_type) (channel_type) (function_type) (generic_type)]) @definition.type
(type_alias name: (type_identifier) @name) @definition.type
(package_clause (package_identifier) @name) @definition.module
