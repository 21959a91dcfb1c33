; Python: functions at module level or nested, methods (functions whose
; parent block belongs to a class), classes.
(class_definition
  body: (block
    [(function_definition name: (identifier) @name) @definition.method
     (decorated_definition
       definition: (function_definition name: (identifier) @name) @definition.method)]))
(module (function_definition name: (identifier) @name) @definition.function)
(module (decorated_definition
  definition: (function_definition name: (identifier) @name) @definition.function))
(function_definition
  body: (block (function_definition name: (identifier) @name) @definition.function))
(class_definition name: (identifier) @name) @definition.class
(type_alias_statement left: (type (identifier) @name)) @definition.type
