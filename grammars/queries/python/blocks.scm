(function_definition body: (block) @block.function)
(class_definition body: (block) @block.class)
(block) @block
