; JavaScript: function declarations, functions and arrows bound to a name,
; module-level and exported constants and variables, classes with their
; methods and fields (@scope: the class).
[(function_declaration name: (identifier) @name)
 (generator_function_declaration name: (identifier) @name)] @definition.function
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function
(program [(lexical_declaration (variable_declarator name: (identifier) @name)) @definition.variable
          (variable_declaration (variable_declarator name: (identifier) @name)) @definition.variable
          (export_statement declaration: [(lexical_declaration (variable_declarator name: (identifier) @name))
                                          (variable_declaration (variable_declarator name: (identifier) @name))] @definition.variable)])
[(class_declaration name: (identifier) @name)
 (class name: (identifier) @name)] @definition.class
(class_declaration name: (identifier) @scope body: (class_body
  [(method_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.method
   (field_definition property: [(property_identifier) (private_property_identifier)] @name) @definition.field]))
(method_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.method
