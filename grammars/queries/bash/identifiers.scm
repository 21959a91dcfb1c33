[(variable_name) (command_name)] @identifier
(function_definition name: (word) @identifier)
