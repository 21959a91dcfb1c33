; C++: free functions, methods defined in or out of class, their
; prototypes, classes, structs, unions, enums with their constants,
; aliases, namespaces, macros, fields and file-scope variables.
; @declarator: the name is found by walking the declarator chain down;
; @scope names a member's container. Declarations inside function bodies
; are dropped by the indexer.
(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier scope: (_) @scope name: (_) @name))) @definition.method
(function_definition declarator: (_) @declarator) @definition.function
(declaration declarator: (_) @declarator) @definition.variable
(class_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.class
(struct_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.class
(union_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.class
(enum_specifier name: (type_identifier) @name body: (enumerator_list)) @definition.type
(type_definition declarator: (_) @declarator) @definition.type
(alias_declaration name: (type_identifier) @name) @definition.type
(namespace_definition name: (namespace_identifier) @name) @definition.module
(preproc_function_def name: (identifier) @name) @definition.macro
(preproc_def name: (identifier) @name) @definition.macro
[(class_specifier name: (type_identifier) @scope
   body: (field_declaration_list
     [(field_declaration declarator: (_) @declarator) @definition.field
      (function_definition declarator: (_) @declarator) @definition.method
      (declaration declarator: (_) @declarator) @definition.method]))
 (struct_specifier name: (type_identifier) @scope
   body: (field_declaration_list
     [(field_declaration declarator: (_) @declarator) @definition.field
      (function_definition declarator: (_) @declarator) @definition.method
      (declaration declarator: (_) @declarator) @definition.method]))]
(field_declaration declarator: (_) @declarator) @definition.field
(enum_specifier name: (type_identifier) @scope
  body: (enumerator_list (enumerator name: (identifier) @name) @definition.constant))
(enumerator name: (identifier) @name) @definition.constant
