[(function_declaration body: (block) @block.function)
 (method_declaration body: (block) @block.function)
 (func_literal body: (block) @block.function)]
[(field_declaration_list) (interface_type)] @block.class
(block) @block
