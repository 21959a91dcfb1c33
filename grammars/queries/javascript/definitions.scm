; JavaScript: function declarations, functions and arrows bound to a name,
; methods, classes.
[(function_declaration name: (identifier) @name)
 (generator_function_declaration name: (identifier) @name)] @definition.function
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function
(method_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.method
[(class_declaration name: (identifier) @name)
 (class name: (identifier) @name)] @definition.class
