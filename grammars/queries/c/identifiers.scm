[(identifier) (field_identifier) (type_identifier) (statement_identifier)] @identifier
