(pair key: (string (string_content) @identifier))
