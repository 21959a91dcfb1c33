; `source file` and `. file`.
(command
  name: (command_name (word) @_cmd (#match? @_cmd "^(source|\\.)$"))
  argument: [(word) (string) (raw_string) (concatenation)] @import.path) @import
