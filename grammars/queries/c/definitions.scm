; C: functions and their prototypes, file-scope and extern variables,
; structs, unions, enums with their constants, typedefs, macros, fields.
; @declarator: the name is found by walking the declarator chain down
; (pointers, arrays, parentheses, init and function declarators), which a
; query cannot express for any depth. @scope names the container of a
; member (a struct, union or enum, or the typedef naming one).
; Declarations inside function bodies are dropped by the indexer.
(function_definition declarator: (_) @declarator) @definition.function
(declaration declarator: (_) @declarator) @definition.variable
(struct_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.class
(union_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.class
(enum_specifier name: (type_identifier) @name body: (enumerator_list)) @definition.type
(type_definition declarator: (_) @declarator) @definition.type
(preproc_function_def name: (identifier) @name) @definition.macro
(preproc_def name: (identifier) @name) @definition.macro
(struct_specifier name: (type_identifier) @scope
  body: (field_declaration_list (field_declaration declarator: (_) @declarator) @definition.field))
(union_specifier name: (type_identifier) @scope
  body: (field_declaration_list (field_declaration declarator: (_) @declarator) @definition.field))
(type_definition
  type: [(struct_specifier body: (field_declaration_list
           (field_declaration declarator: (_) @declarator) @definition.field))
         (union_specifier body: (field_declaration_list
           (field_declaration declarator: (_) @declarator) @definition.field))]
  declarator: (type_identifier) @scope)
(field_declaration declarator: (_) @declarator) @definition.field
(enum_specifier name: (type_identifier) @scope
  body: (enumerator_list (enumerator name: (identifier) @name) @definition.constant))
(type_definition
  type: (enum_specifier body: (enumerator_list (enumerator name: (identifier) @name) @definition.constant))
  declarator: (type_identifier) @scope)
(enumerator name: (identifier) @name) @definition.constant
