; Go: functions; methods with their receiver's type as @scope; named types
; (struct, interface and others), their fields and interface methods;
; package-level constants and variables; the package.
(function_declaration name: (identifier) @name) @definition.function
(method_declaration
  receiver: (parameter_list (parameter_declaration
    type: [(type_identifier) @scope
           (pointer_type (type_identifier) @scope)
           (generic_type type: (type_identifier) @scope)
           (pointer_type (generic_type type: (type_identifier) @scope))]))
  name: (field_identifier) @name) @definition.method
(type_spec name: (type_identifier) @name type: (struct_type)) @definition.class
(type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface
(type_spec name: (type_identifier) @name
  type: [(type_identifier) (qualified_type) (pointer_type) (array_type) (slice_type)
         (map_type) (channel_type) (function_type) (generic_type)]) @definition.type
(type_alias name: (type_identifier) @name) @definition.type
(type_spec name: (type_identifier) @scope
  type: (struct_type (field_declaration_list
    (field_declaration name: (field_identifier) @name) @definition.field)))
(type_spec name: (type_identifier) @scope
  type: (interface_type (method_elem name: (field_identifier) @name) @definition.method))
(source_file (const_declaration (const_spec name: (identifier) @name) @definition.constant))
(source_file (var_declaration [(var_spec name: (identifier) @name) @definition.variable
                               (var_spec_list (var_spec name: (identifier) @name) @definition.variable)]))
(package_clause (package_identifier) @name) @definition.module
