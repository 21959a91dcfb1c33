(function_definition body: (compound_statement) @block.function)
[(compound_statement) (do_group)] @block
