[(identifier) (type_identifier)] @identifier
