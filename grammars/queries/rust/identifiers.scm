[(identifier) (field_identifier) (type_identifier) (shorthand_field_identifier)] @identifier
