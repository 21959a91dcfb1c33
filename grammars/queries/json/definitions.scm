; JSON: the keys of the top-level object name what the file defines
; (package.json scripts, tsconfig options), so they count as definitions.
(document (object (pair key: (string (string_content) @name)) @definition.type))
