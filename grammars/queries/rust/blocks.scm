(function_item body: (block) @block.function)
(closure_expression body: (block) @block.function)
[(declaration_list) (field_declaration_list) (enum_variant_list)] @block.class
(block) @block
