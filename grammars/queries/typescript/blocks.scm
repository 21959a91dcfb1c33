[(function_declaration body: (statement_block) @block.function)
 (generator_function_declaration body: (statement_block) @block.function)
 (function_expression body: (statement_block) @block.function)
 (generator_function body: (statement_block) @block.function)
 (arrow_function body: (statement_block) @block.function)
 (method_definition body: (statement_block) @block.function)]
[(class_body) (interface_body) (enum_body)] @block.class
(statement_block) @block
