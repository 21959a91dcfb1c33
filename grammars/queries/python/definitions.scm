; Python: classes; methods (plain and decorated, the decorators included)
; with their class as @scope; functions at module level, in module-level
; if/try blocks and nested; module-level assignments; class attributes and
; the attributes a method sets on self.
(class_definition name: (identifier) @name) @definition.class
(class_definition name: (identifier) @scope
  body: (block [(function_definition name: (identifier) @name) @definition.method
                (decorated_definition
                  definition: (function_definition name: (identifier) @name)) @definition.method]))
(module [(function_definition name: (identifier) @name) @definition.function
         (decorated_definition
           definition: (function_definition name: (identifier) @name)) @definition.function])
(module [(if_statement [(block (function_definition name: (identifier) @name) @definition.function)
                        (else_clause (block (function_definition name: (identifier) @name) @definition.function))])
         (try_statement (block (function_definition name: (identifier) @name) @definition.function))])
(function_definition
  body: (block [(function_definition name: (identifier) @name) @definition.function
                (decorated_definition
                  definition: (function_definition name: (identifier) @name)) @definition.function]))
(module (expression_statement
  (assignment left: [(identifier) @name (pattern_list (identifier) @name)])) @definition.variable)
(module [(if_statement [(block (expression_statement (assignment left: (identifier) @name)) @definition.variable)
                        (else_clause (block (expression_statement (assignment left: (identifier) @name)) @definition.variable))])
         (try_statement (block (expression_statement (assignment left: (identifier) @name)) @definition.variable))])
(class_definition name: (identifier) @scope
  body: (block (expression_statement (assignment left: (identifier) @name)) @definition.field))
(class_definition name: (identifier) @scope
  body: (block [(function_definition body: (block (expression_statement
                  (assignment left: (attribute object: (identifier) @_self
                                               attribute: (identifier) @name))) @definition.field))
                (decorated_definition definition: (function_definition body: (block (expression_statement
                  (assignment left: (attribute object: (identifier) @_self
                                               attribute: (identifier) @name))) @definition.field)))])
  (#eq? @_self "self"))
(type_alias_statement left: (type (identifier) @name)) @definition.type
