; JSON has no imports; "$ref" and "extends" values are the nearest thing.
(pair
  key: (string (string_content) @_key (#match? @_key "^(\\$ref|extends|\\$schema)$"))
  value: (string (string_content) @import.path)) @import
