[(identifier) (field_identifier) (type_identifier) (namespace_identifier)
 (statement_identifier)] @identifier
