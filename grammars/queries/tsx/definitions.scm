; TSX (a copy of the TypeScript file, so each grammar has its own): functions and
; arrows bound to a name; module-level and exported constants and
; variables; classes with their methods and fields (@scope: the class);
; interfaces and object type aliases with their members; type aliases;
; enums with their members; namespaces.
[(function_declaration name: (identifier) @name)
 (generator_function_declaration name: (identifier) @name)
 (function_signature name: (identifier) @name)] @definition.function
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function
(program [(lexical_declaration (variable_declarator name: (identifier) @name)) @definition.variable
          (variable_declaration (variable_declarator name: (identifier) @name)) @definition.variable
          (export_statement declaration: [(lexical_declaration (variable_declarator name: (identifier) @name))
                                          (variable_declaration (variable_declarator name: (identifier) @name))] @definition.variable)
          (ambient_declaration [(lexical_declaration (variable_declarator name: (identifier) @name))
                                (variable_declaration (variable_declarator name: (identifier) @name))] @definition.variable)])
[(class_declaration name: (type_identifier) @name)
 (abstract_class_declaration name: (type_identifier) @name)
 (class name: (type_identifier) @name)] @definition.class
[(class_declaration name: (type_identifier) @scope body: (class_body
   [(method_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.method
    (method_signature name: [(property_identifier) (private_property_identifier)] @name) @definition.method
    (abstract_method_signature name: [(property_identifier) (private_property_identifier)] @name) @definition.method
    (public_field_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.field]))
 (abstract_class_declaration name: (type_identifier) @scope body: (class_body
   [(method_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.method
    (method_signature name: [(property_identifier) (private_property_identifier)] @name) @definition.method
    (abstract_method_signature name: [(property_identifier) (private_property_identifier)] @name) @definition.method
    (public_field_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.field]))]
(method_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.method
(interface_declaration name: (type_identifier) @name) @definition.interface
(interface_declaration name: (type_identifier) @scope body: (interface_body
  [(property_signature name: (property_identifier) @name) @definition.field
   (method_signature name: (property_identifier) @name) @definition.method]))
(type_alias_declaration name: (type_identifier) @name) @definition.type
(type_alias_declaration name: (type_identifier) @scope value: (object_type
  [(property_signature name: (property_identifier) @name) @definition.field
   (method_signature name: (property_identifier) @name) @definition.method]))
(enum_declaration name: (identifier) @name) @definition.type
(enum_declaration name: (identifier) @scope body: (enum_body
  [(property_identifier) @name @definition.constant
   (enum_assignment name: (property_identifier) @name) @definition.constant]))
(internal_module name: [(identifier) (nested_identifier)] @name) @definition.module
