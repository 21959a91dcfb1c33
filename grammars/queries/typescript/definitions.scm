; TypeScript (the TSX grammar shares these node names): functions, arrows
; bound to a name, methods, classes, interfaces, type aliases, enums, namespaces.
[(function_declaration name: (identifier) @name)
 (generator_function_declaration name: (identifier) @name)
 (function_signature name: (identifier) @name)] @definition.function
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function
[(method_definition name: [(property_identifier) (private_property_identifier)] @name)
 (method_signature name: [(property_identifier) (private_property_identifier)] @name)
 (abstract_method_signature name: [(property_identifier) (private_property_identifier)] @name)] @definition.method
[(class_declaration name: (type_identifier) @name)
 (abstract_class_declaration name: (type_identifier) @name)
 (class name: (type_identifier) @name)] @definition.class
[(interface_declaration name: (type_identifier) @name)
 (type_alias_declaration name: (type_identifier) @name)
 (enum_declaration name: (identifier) @name)] @definition.type
(internal_module name: [(identifier) (nested_identifier)] @name) @definition.module
