(function_definition body: (compound_statement) @block.function)
(lambda_expression body: (compound_statement) @block.function)
[(field_declaration_list) (enumerator_list)] @block.class
(declaration_list) @block.class
(compound_statement) @block
