[(method_declaration body: (block) @block.function)
 (constructor_declaration body: (constructor_body) @block.function)
 (compact_constructor_declaration body: (block) @block.function)
 (lambda_expression body: (block) @block.function)]
[(class_body) (interface_body) (enum_body) (annotation_type_body)] @block.class
(block) @block
